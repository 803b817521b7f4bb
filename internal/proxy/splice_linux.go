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
// tee(2) makes the consumer's pipe share the same pages (no copy either),
// without waiting: when the consumer's pipe is full, the relay reads that
// much itself, writes it on and counts it dropped from normalization, as
// a read the queue has no room for is counted.
//
// A drain goroutine reads the consumer's pipe back into the tee's queue, in
// the order the relay teed it (segs says which direction each piece is and
// when it was read; both directions share the pipe and segs under mu), so
// the queue and the cutting of lines behind it are as with the copying
// relay, and the consumer's pipe only has to hold what the drain has not
// been scheduled to read yet.
type splicer struct {
	t *tee

	mu      sync.Mutex // orders the bytes in w with the sends on segs
	r, w    *os.File   // the consumer's pipe
	wrc     syscall.RawConn
	segs    chan seg
	maxSegs int            // data segs are sent only below this; the rest of segs is for the ends
	ended   [3]atomic.Bool // a direction's end was sent (at most once, so it always fits)
	broken  atomic.Bool    // tee failed other than for a full pipe: the rest is dropped, counted
	onBreak func(error)
	feeders int
	done    chan struct{} // the drain ended
}

// seg is one tee of one direction, or its end.
type seg struct {
	f   *feeder
	at  time.Duration
	n   int // bytes in the consumer's pipe
	gap gap // what the relay dropped of this direction just before
	eof bool
}

// newSplicer returns a splicer for a run with this many feeders, or nil
// when the system does not splice and tee pipes (the relay then copies).
func newSplicer(t *tee, maxSegs, feeders int, onBreak func(error)) *splicer {
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
	s := &splicer{t: t, r: r, w: w, wrc: wrc, maxSegs: maxSegs, segs: make(chan seg, maxSegs+feeders),
		onBreak: onBreak, feeders: feeders, done: make(chan struct{})}
	go s.drain()
	return s
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

// drain reads the consumer's pipe into the tee's queue until every
// direction ended.
func (s *splicer) drain() {
	defer close(s.done)
	defer s.w.Close()
	defer s.r.Close()
	for ends := 0; ends < s.feeders; {
		sg := <-s.segs
		if sg.n > 0 {
			b := getBuf(sg.n)
			if _, err := io.ReadFull(s.r, b); err != nil {
				// Cannot happen while w is open: the bytes were teed
				// before the seg was sent. Counted rather than guessed.
				putBuf(b)
				sg.gap.add(gap{bytes: int64(sg.n), newlines: 1})
				sg.f.addGap(sg.gap)
			} else {
				sg.f.queueOwned(b, sg.at, sg.gap)
			}
		} else {
			sg.f.addGap(sg.gap)
		}
		if sg.eof {
			sg.f.flush()
			ends++
		}
	}
}

// end ends f's direction once, after what the relay teed of it so far;
// g is what it dropped since. It never waits: the ends have room of their
// own in segs.
func (s *splicer) end(f *feeder, g gap) {
	if s.ended[f.dir].Swap(true) {
		return
	}
	s.segs <- seg{f: f, at: time.Since(s.t.start), gap: g, eof: true}
}

// relay moves src to dst, both pipes, until src ends, teeing each piece
// into the consumer's pipe just before it moves (so that a line is queued
// before anything it causes on the other side, as with the copying relay).
// When dst fails, onDstFail is called once and src is still read to its
// end (and teed); with a nil onDstFail the relay ends there.
func (s *splicer) relay(dst, src *os.File, f *feeder, onDstFail func()) {
	var pend gap // dropped since the last seg of this direction
	defer func() { s.end(f, pend) }()
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
		werr := wait(srcRC, srcNB, unix.POLLIN, func(sfd int) bool {
			n, dropped, eof, rerr = s.take(sfd, f, &pend, &buf)
			return n > 0 || dropped != nil || eof || rerr != nil
		})
		if werr != nil || rerr != nil || eof {
			return
		}
		if dropped != nil {
			if !dead {
				if _, err := dst.Write(dropped); err != nil {
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
			moved, err := move(dstRC, dstNB, srcRC, n)
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
		if _, err := io.ReadFull(src, buf[:n]); err != nil {
			return
		}
	}
}

// take tees what src holds into the consumer's pipe and says how much
// (n). When the consumer's pipe or segs is full it reads up to relayBuf of
// src itself instead (dropped, counted in pend). All zero: src is empty
// and open; wait.
func (s *splicer) take(sfd int, f *feeder, pend *gap, buf *[]byte) (n int, dropped []byte, eof bool, err error) {
	if !s.broken.Load() {
		s.mu.Lock()
		if len(s.segs) < s.maxSegs {
			var m int64
			var e error
			cerr := s.wrc.Control(func(wfd uintptr) {
				for {
					m, e = unix.Tee(sfd, int(wfd), relayBuf, unix.SPLICE_F_NONBLOCK)
					if e != unix.EINTR {
						return
					}
				}
			})
			if cerr != nil {
				// The run is over and the drain closed the pipe (a relay
				// of a client that never closed its end lives on).
				s.broken.Store(true)
				s.mu.Unlock()
				return s.dropRead(sfd, pend, buf)
			}
			if e == nil && m > 0 {
				s.segs <- seg{f: f, at: time.Since(s.t.start), n: int(m), gap: *pend}
				*pend = gap{}
				s.mu.Unlock()
				return int(m), nil, false, nil
			}
			s.mu.Unlock()
			switch {
			case e == nil: // m == 0: src has no writer left and is empty
				return 0, nil, true, nil
			case e == unix.EAGAIN:
				if k, _ := unix.IoctlGetInt(sfd, unix.TIOCINQ); k == 0 {
					return 0, nil, false, nil // src is empty: wait
				}
				// The consumer's pipe is full: dropped below.
			default:
				if !s.broken.Swap(true) && s.onBreak != nil {
					s.onBreak(e)
				}
			}
		} else {
			s.mu.Unlock()
		}
	}
	return s.dropRead(sfd, pend, buf)
}

// dropRead reads up to relayBuf of src for the relay to write on, dropped
// from normalization and counted in pend.
func (s *splicer) dropRead(sfd int, pend *gap, buf *[]byte) (n int, dropped []byte, eof bool, err error) {
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
		pend.add(gapOf(p))
		s.t.behind()
		return 0, p, false, nil
	}
}

// move splices n bytes from src to dst and returns how many it moved.
func move(dstRC syscall.RawConn, dstNB bool, srcRC syscall.RawConn, n int) (int, error) {
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
		})
		switch {
		case werr != nil:
			return moved, werr
		case e != nil:
			return moved, e
		case m == 0:
			return moved, io.ErrUnexpectedEOF // src lost what was teed of it
		}
		moved += int(m)
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

// wait runs op on rc's fd until it returns true, waiting for the fd to be
// ready (ev) between tries: by Go's poller when the fd is non-blocking
// (closing the file ends the wait), or else by poll(2), as a blocking read
// or write would wait.
func wait(rc syscall.RawConn, nb bool, ev int16, op func(fd int) bool) error {
	f := func(fd uintptr) bool { return op(int(fd)) }
	if nb {
		if ev == unix.POLLIN {
			return rc.Read(f)
		}
		return rc.Write(f)
	}
	var err error
	cerr := rc.Control(func(fd uintptr) {
		for !op(int(fd)) {
			pfd := []unix.PollFd{{Fd: int32(fd), Events: ev}}
			if _, e := unix.Poll(pfd, -1); e != nil && !errors.Is(e, unix.EINTR) {
				err = e
				return
			}
		}
	})
	if cerr != nil {
		return cerr
	}
	return err
}
