package proxy

import (
	"bytes"
	"sync"
	"sync/atomic"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
)

// Line is one line the relay carried, copied for normalization: the bytes
// between two newlines with the surrounding white space trimmed (the relay
// itself carried them untouched).
type Line struct {
	Dir pb.Direction
	// At is when the relay saw the line's last byte, since the proxy started.
	At time.Duration
	// Msg is the line without its newline and surrounding white space.
	Msg []byte
}

// Drops counts what normalization did not get. The relay never drops
// anything; these are only lines that were not copied beside it.
type Drops struct {
	// Behind counts lines dropped because the queue to normalization was
	// full (the normalizer fell behind).
	Behind, BehindBytes int64
	// TooBig counts lines over the frame limit: relayed whole, never copied.
	TooBig, TooBigBytes int64
}

// tee copies the lines of the relayed bytes onto a bounded queue, without
// ever blocking the relay: a line that does not fit is dropped and counted.
// Each direction has its own splitter; they share the queue, so lines keep
// the order in which the relay finished them.
type tee struct {
	start    time.Time
	maxFrame int
	maxBytes int64

	q        chan Line
	queued   atomic.Int64 // bytes in q
	drops    dropCounter
	onFirst  func()    // called once, at the first drop for being behind
	firstOne sync.Once // guards onFirst

	closeOnce sync.Once
	open      sync.WaitGroup // one per splitter not yet flushed
}

type dropCounter struct {
	behind, behindBytes, tooBig, tooBigBytes atomic.Int64
}

// newTee makes a tee whose queue holds at most maxLines lines and maxBytes
// bytes; a line over maxFrame bytes is never copied.
func newTee(start time.Time, maxLines, maxFrame int, maxBytes int64, onFirstDrop func()) *tee {
	return &tee{start: start, maxFrame: maxFrame, maxBytes: maxBytes, q: make(chan Line, maxLines), onFirst: onFirstDrop}
}

// drops returns what was dropped so far.
func (t *tee) dropped() Drops {
	return Drops{
		Behind: t.drops.behind.Load(), BehindBytes: t.drops.behindBytes.Load(),
		TooBig: t.drops.tooBig.Load(), TooBigBytes: t.drops.tooBigBytes.Load(),
	}
}

func (t *tee) push(dir pb.Direction, msg []byte) {
	n := int64(len(msg))
	if t.queued.Add(n) > t.maxBytes {
		t.queued.Add(-n)
		t.dropBehind(n)
		return
	}
	buf := getBuf(len(msg))
	copy(buf, msg)
	l := Line{Dir: dir, At: time.Since(t.start), Msg: buf}
	select {
	case t.q <- l:
	default:
		putBuf(buf)
		t.queued.Add(-n)
		t.dropBehind(n)
	}
}

func (t *tee) dropBehind(n int64) {
	t.drops.behind.Add(1)
	t.drops.behindBytes.Add(n)
	if t.onFirst != nil {
		t.firstOne.Do(t.onFirst)
	}
}

// splitter returns the splitter of one direction.
func (t *tee) splitter(dir pb.Direction) *splitter {
	t.open.Add(1)
	return &splitter{t: t, dir: dir}
}

// closeWhenDone closes the queue once every splitter made so far is done.
func (t *tee) closeWhenDone() {
	go func() {
		t.open.Wait()
		t.closeOnce.Do(func() { close(t.q) })
	}()
}

// splitter cuts one direction's bytes into lines. It holds at most one
// partial line of up to maxFrame bytes; past that it holds nothing until
// the line ends.
type splitter struct {
	mu   sync.Mutex // the relay's goroutine observes; Run may flush
	t    *tee
	dir  pb.Direction
	buf  []byte
	over int64 // bytes of the current line when it is over the limit
	done bool
}

// observe takes bytes the relay already wrote on.
func (s *splitter) observe(p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		part := p
		if i >= 0 {
			part, p = p[:i], p[i+1:]
		} else {
			p = nil
		}
		switch {
		case s.over > 0:
			s.over += int64(len(part))
		case len(s.buf)+len(part) > s.t.maxFrame:
			s.over = int64(len(s.buf) + len(part))
			s.release()
		case i >= 0 && len(s.buf) == 0:
			s.emit(part) // the whole line is in this read: copied once
			continue
		default:
			s.buf = append(s.buf, part...)
		}
		if i >= 0 {
			s.endLine()
		}
	}
}

func (s *splitter) endLine() {
	if s.over > 0 {
		s.t.drops.tooBig.Add(1)
		s.t.drops.tooBigBytes.Add(s.over)
		s.over = 0
		return
	}
	s.emit(s.buf)
	s.buf = s.buf[:0]
	if cap(s.buf) > 1<<20 {
		s.release() // a big line passed: do not hold its buffer
	}
}

func (s *splitter) emit(line []byte) {
	if msg := bytes.TrimSpace(line); len(msg) > 0 {
		s.t.push(s.dir, msg)
	}
}

func (s *splitter) release() { s.buf = nil }

// flush ends the direction: a last line without a newline still counts.
func (s *splitter) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return
	}
	s.done = true
	if len(s.buf) > 0 || s.over > 0 {
		s.endLine()
	}
	s.release()
	s.t.open.Done()
}

// next takes the next line off the queue; false once it is closed and
// empty. The consumer gives l.Msg back with putBuf when done with it.
func (t *tee) next() (Line, bool) {
	l, ok := <-t.q
	if ok {
		t.queued.Add(-int64(len(l.Msg)))
	}
	return l, ok
}

// pending says how many lines wait in the queue.
func (t *tee) pending() int { return len(t.q) }

// Line buffers are pooled, so that the relay's goroutine allocates nothing
// in the steady state: a goroutine that allocates while the collector runs
// must help it, and normalization makes garbage enough for that help to
// slow the relay to normalization's pace. Buffers come in size classes,
// powers of 4 from 1 KiB; a line over the largest class is allocated.
const (
	minClass   = 10 // 1 KiB
	numClasses = 8  // up to 16 MiB
)

var linePools [numClasses]sync.Pool

func classOf(n int) int {
	c := 0
	for size := 1 << minClass; size < n; size <<= 2 {
		c++
	}
	return c
}

// getBuf returns a buffer of length n.
func getBuf(n int) []byte {
	c := classOf(n)
	if c >= numClasses {
		return make([]byte, n)
	}
	if p, ok := linePools[c].Get().(*[]byte); ok {
		return (*p)[:n]
	}
	return make([]byte, n, 1<<(minClass+2*c))
}

// putBuf gives a buffer from getBuf back; nothing may use it afterwards.
func putBuf(b []byte) {
	c := classOf(cap(b))
	if c >= numClasses || cap(b) != 1<<(minClass+2*c) {
		return
	}
	linePools[c].Put(&b)
}
