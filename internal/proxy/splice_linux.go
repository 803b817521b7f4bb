package proxy

import (
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// splicer is the relay for when both of the client's ends are pipes, as
// the agent's are: the bytes go from pipe to pipe inside the kernel
// (splice(2)) and never through the proxy's memory. Before each move,
// tee(2) makes the consumer's pipe share the same pages (no copy either)
// and a chunk on the tee's queue says which direction they are and when
// they were read; the consumer reads them out of its pipe when it gets to
// that chunk (tee.take), so that copy is the consumer's work, off the
// relay's path. Both directions share the pipe and the queue under mu, so
// the pipe's bytes are in the queue's order.
//
// The tee never waits: when the consumer's pipe is full (the consumer is
// more than a pipe behind) the relay reads the bytes itself and copies
// them onto the queue as the copying relay does (feeder.feed: within the
// queue's bounds, or dropped and counted), then writes them on.
type splicer struct {
	t       *tee
	mu      sync.Mutex // orders the bytes in w with the queue's chunks
	r, w    *os.File   // the consumer's pipe
	wrc     syscall.RawConn
	broken  atomic.Bool  // tee failed other than for a full pipe: the relay copies from then on
	moved   atomic.Int64 // bytes moved by splice
	onBreak func(error)
}

// newSplicer returns a splicer, or nil when the system does not splice
// and tee pipes (the relay then copies). The tee reads the consumer's end.
func newSplicer(t *tee, onBreak func(error)) *splicer {
	if !spliceWorks() {
		return nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil
	}
	growPipe(w)
	wrc, err := w.SyscallConn()
	if err != nil {
		r.Close()
		w.Close()
		return nil
	}
	t.pipe = r
	return &splicer{t: t, r: r, w: w, wrc: wrc, onBreak: onBreak}
}

// spliced is how many bytes the relay moved with splice, both ways.
func (s *splicer) spliced() int64 {
	if s == nil {
		return 0
	}
	return s.moved.Load()
}

// close closes the consumer's pipe, once the consumer is done with it.
func (s *splicer) close() {
	s.w.Close()
	s.r.Close()
}

// spliceWorks tries tee and splice on a pipe of its own, once: a sandbox
// (seccomp, gVisor) may refuse them.
var spliceWorks = sync.OnceValue(func() bool {
	var a, b [2]int
	if unix.Pipe2(a[:], unix.O_CLOEXEC|unix.O_NONBLOCK) != nil {
		return false
	}
	defer unix.Close(a[0])
	defer unix.Close(a[1])
	if unix.Pipe2(b[:], unix.O_CLOEXEC|unix.O_NONBLOCK) != nil {
		return false
	}
	defer unix.Close(b[0])
	defer unix.Close(b[1])
	if n, err := unix.Write(a[1], []byte("x\n")); n != 2 || err != nil {
		return false
	}
	if n, err := unix.Tee(a[0], b[1], 2, unix.SPLICE_F_NONBLOCK); n != 2 || err != nil {
		return false
	}
	n, err := unix.Splice(a[0], nil, b[1], nil, 2, unix.SPLICE_F_NONBLOCK)
	return n == 2 && err == nil
})

// isPipe says whether f is a pipe (or FIFO).
func isPipe(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeNamedPipe != 0
}

// spliceable returns the client's ends as files when both are pipes.
func spliceable(stdin any, stdout any) (in, out *os.File, ok bool) {
	in, ok1 := stdin.(*os.File)
	out, ok2 := stdout.(*os.File)
	if !ok1 || !ok2 || !isPipe(in) || !isPipe(out) {
		return nil, nil, false
	}
	return in, out, true
}

// relay moves src to dst, both pipes, until src ends, teeing each piece
// into the consumer's pipe just before it moves (so that a line is queued
// before anything it causes on the other side, as with the copying relay).
// When dst fails, onDstFail is called once and src is still read to its
// end (and teed); with a nil onDstFail the relay ends there. d, when
// set, bounds each read of src once the agent exited and sees the writes
// to dst progress (drain).
func (s *splicer) relay(dst, src *os.File, f *feeder, onDstFail func(), d *drain) {
	defer f.flush()
	srcRC, err1 := src.SyscallConn()
	dstRC, err2 := dst.SyscallConn()
	if err1 != nil || err2 != nil {
		return
	}
	srcNB, dstNB := nonblocking(srcRC), nonblocking(dstRC)
	var buf []byte // for what is dropped
	dead := false
	for {
		var n int
		var dropped []byte
		var eof bool
		var rerr error
		armed := d.arm()
		werr := wait(srcRC, srcNB, unix.POLLIN, func(sfd int) bool {
			n, dropped, eof, rerr = s.take(sfd, f, &buf)
			return n > 0 || dropped != nil || eof || rerr != nil
		}, nil)
		if werr != nil || rerr != nil || eof {
			d.ended(werr)
			return
		}
		d.took(n+len(dropped), armed)
		if dropped != nil {
			if !dead {
				if err := d.write(dst, dropped); err != nil {
					if onDstFail == nil {
						return
					}
					dead = true
					onDstFail()
				}
			}
			continue
		}
		if !dead {
			moved, err := move(dstRC, dstNB, srcRC, n, d)
			s.moved.Add(int64(moved))
			if err == nil {
				continue
			}
			if onDstFail == nil {
				return
			}
			dead = true
			onDstFail()
			n -= moved
		}
		// dst is gone: what was teed is read off src and let go.
		if buf == nil {
			buf = make([]byte, relayBuf)
		}
		d.arm()
		if _, err := io.ReadFull(src, buf[:n]); err != nil {
			return
		}
	}
}

// take tees what src holds into the consumer's pipe and queues it, and
// says how much (n). When it cannot (the consumer's pipe or the queue is
// full, f is done, tee failed) it reads up to relayBuf of src itself and
// feeds that (dropped): the caller writes it on. All zero: src is empty
// and open; wait.
func (s *splicer) take(sfd int, f *feeder, buf *[]byte) (n int, dropped []byte, eof bool, err error) {
	if !s.broken.Load() {
		s.mu.Lock()
		f.mu.Lock()
		// The pipe's bytes count in the queue's bound as copied ones do.
		room := s.t.maxBytes - s.t.queued.Load()
		if !f.done && len(s.t.q) < s.t.maxReads && room > 0 {
			var m int64
			var e error
			cerr := s.wrc.Control(func(wfd uintptr) {
				for {
					m, e = unix.Tee(sfd, int(wfd), int(min(room, relayBuf)), unix.SPLICE_F_NONBLOCK)
					if e != unix.EINTR {
						return
					}
				}
			})
			if cerr == nil && e == nil && m > 0 {
				f.teedLocked(int(m), time.Since(s.t.start))
				f.mu.Unlock()
				s.mu.Unlock()
				return int(m), nil, false, nil
			}
			f.mu.Unlock()
			s.mu.Unlock()
			switch {
			case cerr != nil:
				s.broken.Store(true) // the run is over: the pipe is closed
			case e == nil: // m == 0: src has no writer left and is empty
				return 0, nil, true, nil
			case e == unix.EAGAIN:
				// src is empty, or the consumer's pipe is full (then tee
				// says EAGAIN even when src has no writer left and is
				// empty, and the edge of its end may be past): poll says
				// which.
				pfd := []unix.PollFd{{Fd: int32(sfd), Events: unix.POLLIN}}
				if _, err := unix.Poll(pfd, 0); err == nil && pfd[0].Revents&unix.POLLIN == 0 {
					if pfd[0].Revents&unix.POLLHUP != 0 {
						return 0, nil, true, nil
					}
					return 0, nil, false, nil // wait
				}
				// The consumer's pipe is full: copied below.
			default:
				if !s.broken.Swap(true) && s.onBreak != nil {
					s.onBreak(e)
				}
			}
		} else {
			f.mu.Unlock()
			s.mu.Unlock()
		}
	}
	if *buf == nil {
		*buf = make([]byte, relayBuf)
	}
	for {
		r, e := unix.Read(sfd, *buf)
		switch {
		case e == unix.EINTR:
			continue
		case e == unix.EAGAIN:
			return 0, nil, false, nil
		case e != nil:
			return 0, nil, false, e
		case r == 0:
			return 0, nil, true, nil
		}
		p := (*buf)[:r]
		s.mu.Lock() // in the queue's order with the other direction's tees
		f.feed(p)
		s.mu.Unlock()
		return 0, p, false, nil
	}
}

// move splices n bytes from src to dst and returns how many it moved.
// Each splice that moves bytes is progress for d (when set), and a d given
// up ends a wait on a blocking dst.
func move(dstRC syscall.RawConn, dstNB bool, srcRC syscall.RawConn, n int, d *drain) (int, error) {
	d.writing(true)
	defer d.writing(false)
	moved := 0
	for moved < n {
		var m int64
		var e error
		werr := wait(dstRC, dstNB, unix.POLLOUT, func(dfd int) bool {
			cerr := srcRC.Control(func(sfd uintptr) {
				m, e = unix.Splice(int(sfd), nil, dfd, nil, n-moved, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
			})
			if cerr != nil {
				e = cerr
			}
			return e != unix.EAGAIN && e != unix.EINTR
		}, d.given())
		switch {
		case werr != nil:
			return moved, werr
		case e != nil:
			return moved, e
		case m == 0:
			return moved, io.ErrUnexpectedEOF // src lost what was teed of it
		}
		moved += int(m)
		d.progressed()
	}
	return moved, nil
}

// nonblocking says whether rc's file is in non-blocking mode, which is
// when Go's poller waits for it.
func nonblocking(rc syscall.RawConn) bool {
	nb := false
	_ = rc.Control(func(fd uintptr) {
		fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		nb = err == nil && fl&unix.O_NONBLOCK != 0
	})
	return nb
}

// errGivenUp ends a wait for a blocking fd the relay gave up on.
var errGivenUp = errors.New("the relay gave up")

// wait runs op on rc's fd until it returns true, waiting for the fd to be
// ready (ev) between tries: by Go's poller when the fd is non-blocking
// (closing the file or a deadline ends the wait), or else by poll(2), as a
// blocking read or write would wait; then, when given is set, the wait
// also ends once given closes (errGivenUp).
func wait(rc syscall.RawConn, nb bool, ev int16, op func(fd int) bool, given <-chan struct{}) error {
	f := func(fd uintptr) bool { return op(int(fd)) }
	if nb {
		if ev == unix.POLLIN {
			return rc.Read(f)
		}
		return rc.Write(f)
	}
	// A read polls first: the relay comes back to read once it took all
	// there was, so a try before the poll would mostly be in vain. A write
	// tries first: there is mostly room.
	var err error
	cerr := rc.Control(func(fd uintptr) {
		if ev != unix.POLLIN && op(int(fd)) {
			return
		}
		timeout := -1
		if given != nil {
			timeout = 100 // ms: to look at given
		}
		for {
			pfd := []unix.PollFd{{Fd: int32(fd), Events: ev}}
			k, e := unix.Poll(pfd, timeout)
			if e != nil && !errors.Is(e, unix.EINTR) {
				err = e
				return
			}
			if k == 0 && e == nil {
				select {
				case <-given:
					err = errGivenUp
					return
				default:
					continue
				}
			}
			if op(int(fd)) {
				return
			}
		}
	})
	if cerr != nil {
		return cerr
	}
	return err
}
