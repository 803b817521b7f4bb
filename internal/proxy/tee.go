package proxy

import (
	"bytes"
	"io"
	"os"
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
	// At is when the relay read the line's last byte, since the proxy
	// started.
	At time.Duration
	// Msg is the line without its newline and surrounding white space.
	Msg []byte
}

// Drops counts what normalization did not get. The relay never drops
// anything; these are only lines that were not copied beside it.
type Drops struct {
	// Behind counts lines dropped because the queue to normalization was
	// full (the normalizer fell behind): every line a byte of which was
	// not copied.
	Behind, BehindBytes int64
	// TooBig counts lines over the frame limit: relayed whole, never copied.
	TooBig, TooBigBytes int64
}

// tee copies the relayed bytes, each read as it was read, onto a bounded
// queue, without ever blocking the relay: a read that does not fit is
// dropped from the copy and counted. The relay's goroutines do no more than
// one copy and one non-blocking send per read; cutting the reads into lines
// is the consumer's work (next), off the relay's path. Both directions share
// the queue, so lines keep the order in which the relay read them: a line is
// queued before anything it causes on the other side.
type tee struct {
	start    time.Time
	maxFrame int
	maxReads int
	maxBytes int64
	// pipe is the consumer's end of the splicer's pipe, where the reads
	// the relay teed are (chunk.piped); nil when the relay copies.
	pipe *os.File
	// What next read of pipe that no chunk took yet, in aheadBuf.
	ahead, aheadBuf []byte

	q      chan chunk
	queued atomic.Int64 // bytes in q
	// The consumer's coalescing wait (wait): while it sleeps, the relay
	// wakes it only when a lot is queued or a direction ended.
	sleeping atomic.Bool
	kick     chan struct{}
	timer    *time.Timer
	waits    int       // the consumer's waits, coalescing or blocking (for tests)
	onFirst  func()    // called once, at the first drop for being behind
	firstOne sync.Once // guards onFirst

	closeOnce sync.Once
	open      sync.WaitGroup // one per feeder not yet flushed
	feeders   []*feeder

	// The consumer's side, used by next only.
	cur   chunk  // the chunk being cut into lines
	rest  []byte // what of cur is not cut yet
	cuts  [3]cutter
	tail  []Line // lines the end of the queue gave
	drops struct {
		behind, behindBytes, tooBig, tooBigBytes atomic.Int64
	}
}

// chunk is one read of one direction, copied.
type chunk struct {
	dir pb.Direction
	at  time.Duration
	b   []byte // from getBuf; nil for the end of the direction
	// piped is how many bytes of this read are in the consumer's pipe:
	// next reads them into b (not from getBuf). They count in the queue's
	// byte bound as copied reads do.
	piped int
	gap   gap  // what of this direction was dropped just before b
	eof   bool // the direction ended after b
}

// gap is what of a direction's bytes the queue had no room for.
type gap struct {
	bytes, newlines int64
	endsLine        bool // the last byte dropped was a newline
}

// newTee makes a tee whose queue holds at most maxReads reads and maxBytes
// bytes; a line over maxFrame bytes is never copied whole.
func newTee(start time.Time, maxReads, maxFrame int, maxBytes int64, onFirstDrop func()) *tee {
	// Two more places than reads, for the two directions' ends: a read
	// never takes them, so that the splicer's check for room holds.
	return &tee{start: start, maxFrame: maxFrame, maxReads: maxReads, maxBytes: maxBytes, q: make(chan chunk, maxReads+2), kick: make(chan struct{}, 1), onFirst: onFirstDrop}
}

// The consumer's coalescing: once it took all that was queued, it waits up
// to coalesceWait before it looks again, unless kickReads reads or
// kickBytes bytes are queued by then (or a direction ends), so that one
// wake-up serves many reads of the relay instead of one each. The relay
// never waits for it: its kick is a flag it reads and, when set, a
// non-blocking send. kickReads and kickBytes leave the consumer's pipe
// (256 slots of a page, 1 MiB) three quarters free when it is woken.
const (
	coalesceWait = time.Millisecond
	kickReads    = 64
	kickBytes    = 256 << 10
)

// queuedOne is called by the relay after it queued a chunk: it wakes a
// sleeping consumer when there is a lot to take or the chunk ends a
// direction.
func (t *tee) queuedOne(end bool) {
	if !t.sleeping.Load() {
		return
	}
	if end || len(t.q) >= min(kickReads, t.maxReads) || t.queued.Load() >= min(kickBytes, t.maxBytes/2) {
		t.wake()
	}
}

func (t *tee) wake() {
	if t.sleeping.CompareAndSwap(true, false) {
		select {
		case t.kick <- struct{}{}:
		default:
		}
	}
}

// wait is the consumer's coalescing wait, when the queue is empty.
func (t *tee) wait() {
	t.waits++
	t.sleeping.Store(true)
	if len(t.q) > 0 && (len(t.q) >= min(kickReads, t.maxReads) || t.queued.Load() >= min(kickBytes, t.maxBytes/2)) {
		t.sleeping.Store(false) // a kick the relay decided on before the flag was up
		return
	}
	if t.timer == nil {
		t.timer = time.NewTimer(coalesceWait)
	} else {
		t.timer.Reset(coalesceWait)
	}
	select {
	case <-t.kick:
	case <-t.timer.C:
	}
	t.sleeping.Store(false)
	t.timer.Stop()
}

// dropped returns what was dropped; final once next returned false.
func (t *tee) dropped() Drops {
	return Drops{
		Behind: t.drops.behind.Load(), BehindBytes: t.drops.behindBytes.Load(),
		TooBig: t.drops.tooBig.Load(), TooBigBytes: t.drops.tooBigBytes.Load(),
	}
}

// feeder returns the relay's side of one direction.
func (t *tee) feeder(dir pb.Direction) *feeder {
	t.open.Add(1)
	f := &feeder{t: t, dir: dir}
	t.feeders = append(t.feeders, f)
	return f
}

// closeWhenDone closes the queue once every feeder made so far is done.
func (t *tee) closeWhenDone() {
	go func() {
		t.open.Wait()
		t.closeOnce.Do(func() { close(t.q) })
		t.wake()
	}()
}

// feeder queues the reads of one direction.
type feeder struct {
	mu   sync.Mutex // the relay's goroutine feeds; Run may flush
	t    *tee
	dir  pb.Direction
	gap  gap // dropped since the last read queued
	done bool
}

// feed takes a read the relay is about to write on.
func (f *feeder) feed(p []byte) {
	if len(p) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done {
		return
	}
	t := f.t
	n := int64(len(p))
	if len(t.q) >= t.maxReads {
		f.drop(p)
		return
	}
	if t.queued.Add(n) > t.maxBytes {
		t.queued.Add(-n)
		f.drop(p)
		return
	}
	buf := getBuf(len(p))
	copy(buf, p)
	select {
	case t.q <- chunk{dir: f.dir, at: time.Since(t.start), b: buf, gap: f.gap}:
		f.gap = gap{}
		t.queuedOne(false)
	default:
		putBuf(buf)
		t.queued.Add(-n)
		f.drop(p)
	}
}

// teedLocked queues n bytes the relay teed into the consumer's pipe (next
// reads them there). The caller holds f.mu from before the tee, saw that
// f is not done and that the queue has room for a read.
func (f *feeder) teedLocked(n int, at time.Duration) {
	f.t.queued.Add(int64(n))
	f.t.q <- chunk{dir: f.dir, at: at, piped: n, gap: f.gap}
	f.gap = gap{}
	f.t.queuedOne(false)
}

// gapOf is the gap p makes when it is dropped.
func gapOf(p []byte) gap {
	if len(p) == 0 {
		return gap{}
	}
	return gap{bytes: int64(len(p)), newlines: int64(bytes.Count(p, []byte{'\n'})), endsLine: p[len(p)-1] == '\n'}
}

// add appends o, dropped right after g.
func (g *gap) add(o gap) {
	if o.bytes == 0 {
		return
	}
	g.bytes += o.bytes
	g.newlines += o.newlines
	g.endsLine = o.endsLine
}

// behind says, once, that normalization is behind.
func (t *tee) behind() {
	if t.onFirst != nil {
		t.firstOne.Do(t.onFirst)
	}
}

// drop counts a read the queue had no room for; the consumer learns of it
// with the next read of the direction, or at its end.
func (f *feeder) drop(p []byte) {
	f.gap.add(gapOf(p))
	f.t.behind()
}

// flush ends the direction: a last line without a newline still counts.
func (f *feeder) flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done {
		return
	}
	f.done = true
	select {
	case f.t.q <- chunk{dir: f.dir, at: time.Since(f.t.start), gap: f.gap, eof: true}:
		f.gap = gap{}
	default:
		// The queue is full: the end is read off f when it is closed.
	}
	f.t.open.Done()
	f.t.queuedOne(true)
}

// cutter cuts one direction's reads into lines. It holds at most one
// partial line of up to maxFrame bytes; past that it holds nothing until
// the line ends.
type cutter struct {
	buf   []byte
	over  int64 // bytes of the current line when it is over the limit
	skip  bool  // the current line lost bytes to a gap: skipped to its end
	reuse bool  // buf was handed out whole: empty it before the next line
	ended bool
}

// next takes the next line off the queue; false once it is closed and
// empty. l.Msg is valid until the next call.
func (t *tee) next() (Line, bool) {
	for {
		if len(t.rest) > 0 {
			if l, ok := t.cut(); ok {
				return l, true
			}
			continue
		}
		if len(t.tail) > 0 {
			l := t.tail[0]
			t.tail = t.tail[1:]
			return l, true
		}
		c, ok := t.recv()
		if !ok {
			if t.end() {
				continue
			}
			return Line{}, false
		}
		t.take(c)
	}
}

// recv takes the next chunk off the queue: at once when there is one;
// else after the coalescing wait, blocking only when that brought nothing.
func (t *tee) recv() (chunk, bool) {
	select {
	case c, ok := <-t.q:
		return c, ok
	default:
	}
	t.wait()
	select {
	case c, ok := <-t.q:
		return c, ok
	default:
	}
	t.waits++
	c, ok := <-t.q
	return c, ok
}

// take makes c the chunk being cut, done with the one before.
func (t *tee) take(c chunk) {
	if t.cur.b != nil {
		t.queued.Add(-int64(len(t.cur.b)))
		if t.cur.piped == 0 {
			putBuf(t.cur.b)
		}
	}
	if c.piped > 0 {
		if b, ok := t.fromPipe(c.piped); ok {
			c.b = b
		} else {
			t.queued.Add(-int64(c.piped))
			// Cannot be while the relay's end is open: the bytes were in
			// the pipe before the chunk was queued. Counted, not guessed.
			c.gap.add(gap{bytes: int64(c.piped)})
		}
	}
	t.cur, t.rest = c, c.b
	t.takeGap(c.dir, c.gap)
	if c.eof {
		t.endDir(c.dir, c.at)
	}
}

// fromPipe returns the next n bytes of the consumer's pipe. It reads
// ahead as much as the pipe holds, so that one read serves the chunks of
// many small reads of the relay. The bytes are valid until the next call
// (by then the chunk they are is cut: cutter copies what it keeps).
func (t *tee) fromPipe(n int) ([]byte, bool) {
	if len(t.ahead) < n {
		if t.aheadBuf == nil {
			t.aheadBuf = make([]byte, 2*relayBuf) // what is left (< n <= relayBuf) and a relayBuf more
		}
		k := copy(t.aheadBuf, t.ahead)
		m, err := io.ReadAtLeast(t.pipe, t.aheadBuf[k:], n-k)
		t.ahead = t.aheadBuf[:k+m]
		if err != nil {
			t.ahead = nil
			return nil, false
		}
	}
	b := t.ahead[:n:n]
	t.ahead = t.ahead[n:]
	return b, true
}

// end finishes the directions whose end did not fit in the queue; true when
// that gave lines.
func (t *tee) end() bool {
	for _, f := range t.feeders {
		f.mu.Lock()
		g := f.gap
		f.gap = gap{}
		f.mu.Unlock()
		t.takeGap(f.dir, g)
		t.endDir(f.dir, time.Since(t.start))
	}
	t.feeders = nil
	return len(t.tail) > 0
}

// takeGap counts the lines a gap broke: each newline dropped ended one, and
// the line the gap ends in goes on past it. A line an earlier gap broke is
// counted once.
func (t *tee) takeGap(dir pb.Direction, g gap) {
	if g.bytes == 0 {
		return
	}
	c := &t.cuts[dir]
	if c.reuse {
		c.buf, c.reuse = c.buf[:0], false
	}
	n := g.newlines
	if !g.endsLine {
		n++
	}
	if c.skip {
		n-- // the line the gap starts in was counted already
	}
	t.drops.behind.Add(n)
	t.drops.behindBytes.Add(g.bytes + int64(len(c.buf)) + c.over)
	c.buf, c.over, c.reuse = c.buf[:0], 0, false
	c.skip = !g.endsLine
}

// endDir ends a direction: a last line without a newline still counts.
func (t *tee) endDir(dir pb.Direction, at time.Duration) {
	c := &t.cuts[dir]
	if c.ended {
		return
	}
	c.ended = true
	if c.reuse {
		c.buf, c.reuse = c.buf[:0], false
	}
	if !c.skip && (len(c.buf) > 0 || c.over > 0) {
		if msg, ok := t.endLine(c); ok {
			t.tail = append(t.tail, Line{Dir: dir, At: at, Msg: msg})
		}
	}
	c.buf = nil
}

// cut cuts what is left of the current chunk up to its next newline.
func (t *tee) cut() (Line, bool) {
	c := &t.cuts[t.cur.dir]
	if c.reuse {
		c.buf, c.reuse = c.buf[:0], false
		if cap(c.buf) > 1<<20 {
			c.buf = nil // a big line passed: do not hold its buffer
		}
	}
	part := t.rest
	i := bytes.IndexByte(part, '\n')
	if i >= 0 {
		part, t.rest = part[:i], part[i+1:]
	} else {
		t.rest = nil
	}
	switch {
	case c.skip:
		t.drops.behindBytes.Add(int64(len(part)))
		if i >= 0 {
			c.skip = false
		}
		return Line{}, false
	case c.over > 0:
		c.over += int64(len(part))
	case len(c.buf)+len(part) > t.maxFrame:
		c.over = int64(len(c.buf) + len(part))
		c.buf = nil
	case i >= 0 && len(c.buf) == 0:
		// The whole line is in this read: handed out where it is.
		msg := bytes.TrimSpace(part)
		return Line{Dir: t.cur.dir, At: t.cur.at, Msg: msg}, len(msg) > 0
	default:
		c.buf = append(c.buf, part...)
	}
	if i < 0 {
		return Line{}, false
	}
	msg, ok := t.endLine(c)
	return Line{Dir: t.cur.dir, At: t.cur.at, Msg: msg}, ok
}

// endLine ends the line c holds; false when there is nothing to hand out.
func (t *tee) endLine(c *cutter) ([]byte, bool) {
	if c.over > 0 {
		t.drops.tooBig.Add(1)
		t.drops.tooBigBytes.Add(c.over)
		c.over = 0
		return nil, false
	}
	c.reuse = true
	msg := bytes.TrimSpace(c.buf)
	return msg, len(msg) > 0
}

// pending says whether more is queued than the lines handed out.
func (t *tee) pending() bool { return len(t.rest) > 0 || len(t.tail) > 0 || len(t.q) > 0 }

// Read buffers are pooled, so that the relay's goroutine allocates nothing
// in the steady state: a goroutine that allocates while the collector runs
// must help it, and normalization makes garbage enough for that help to
// slow the relay to normalization's pace. Buffers come in size classes,
// powers of 4 from 1 KiB; a read over the largest class is allocated.
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
