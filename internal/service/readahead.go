package service

import (
	"context"
	"runtime"
	"sync"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/normalize"
	"google.golang.org/grpc/mem"
)

// readAhead lets a stream read its frames in parallel while the stream
// loop applies them one by one, in order: the reader goroutine starts
// reading each frame, with the dialect its session is expected to use, on
// one of the stream's worker goroutines (at most workers of them, started
// as frames need them and ended with stop), off every session lock
// (normalize.Prepare), and queues the request; the loop takes
// the requests in the order they came, waits for each one's read, and
// applies it, using the read when the session's dialect is the one
// expected and reading the frame again otherwise. Reading a frame is pure,
// so either way the result is what reading it under the lock gives;
// reading (JSON decoding, unquoting outputs) is the larger part of a
// frame's work, so one stream that carries many sessions spreads it over
// the cores while the loop accumulates.
//
// Memory is bounded: a stream holds at most depth requests queued, plus
// the one the reader holds and the one the loop applies (see
// aheadDepth), and each of them is read at most once ahead.
type readAhead struct {
	mu sync.Mutex
	// next is the dialect each session of the stream read its last
	// applied frame with, as the loop last saw it; the expected dialect.
	next map[string]string
	// workers holds a token for each read running on a worker.
	workers chan struct{}
	// jobs hands a frame to an idle worker (nil until the first frame
	// read on one); started counts the workers, at most cap(workers). A
	// worker lives as long as the stream, so the stack the decode grew
	// is there for the next frame: a goroutine per frame grew its stack
	// anew every time (5.5% of acpnormd's CPU at c=8 on the Codex
	// recordings). An idle worker's stack is shrunk by the collector.
	jobs    chan *asyncRead
	started int
	// running counts the workers that have not returned.
	running sync.WaitGroup
	// learnt is the session learn wrote in next last, with the dialect
	// learntAs, while next still holds it (only learn changes next, on
	// the loop's goroutine, which alone reads these two).
	learnt, learntAs string
	// space is the namespace of the stream's identity, which the frames
	// are read in (normalize.PrepareIn).
	space string
}

// maxAheadSessions bounds the sessions a stream remembers the dialect of;
// past it the memory starts over (a frame read with the wrong dialect is
// only read again).
const maxAheadSessions = 1024

// inlineRead is the frame size below which the reader reads the frame
// itself: starting a goroutine costs about what reading so small a frame
// does.
const inlineRead = 1 << 10

// pending is one request on its way from the reader to the loop. It
// travels by value: a pointer would be one more allocation per frame.
type pending struct {
	req *pb.NormalizeRequest
	// buf is the buffer req's message is read in, or nil (see
	// received): the loop releases it once it applied req, and only
	// then.
	buf mem.Buffer
	// read is the frame read ahead on the reader's goroutine (nil: none,
	// or see async).
	read *normalize.Prepared
	// async is the frame being read ahead on a goroutine of its own, or
	// nil.
	async *asyncRead
}

// release frees the buffer p's message is read in, if any: the message
// may not be read after it. A request that is never applied keeps its
// buffer, which the collector takes back (the message may still be read
// ahead on a worker).
func (p pending) release() {
	if p.buf != nil {
		p.buf.Free()
	}
}

// asyncRead is a frame read ahead on a worker: read may be used only once
// done is closed.
type asyncRead struct {
	f    *pb.AcpFrame
	read *normalize.Prepared
	done chan struct{}
}

// aheadWorkers is how many frames of one stream are read at once.
func aheadWorkers() int { return max(1, runtime.GOMAXPROCS(0)) }

// aheadDepth is how many requests a stream queues between its reader and
// its loop: enough for every worker to have a frame and the loop the next
// one, and never more than twice the send queue.
func aheadDepth(workers, sendQueue int) int { return max(1, min(2*workers, 2*sendQueue)) }

func newReadAhead(workers int, space string) *readAhead {
	return &readAhead{next: map[string]string{}, workers: make(chan struct{}, max(1, workers)), space: space}
}

// start starts reading req ahead, when it is a frame that will be read,
// and returns it as pending. It runs on the reader goroutine. It returns
// false when ctx ended while it waited for a worker.
func (a *readAhead) start(ctx context.Context, req *pb.NormalizeRequest) (pending, bool) {
	p := pending{req: req}
	f := req.GetFrame()
	if f == nil || f.GetSessionId() == "" || len(f.GetMessage()) == 0 {
		return p, true
	}
	if len(f.GetMessage()) < inlineRead {
		p.read = a.prepare(f)
		return p, true
	}
	select {
	case a.workers <- struct{}{}:
	case <-ctx.Done():
		return pending{}, false
	}
	// A token is held, so some worker is idle or about to be, or fewer
	// than cap(workers) were started.
	r := &asyncRead{f: f, done: make(chan struct{})}
	p.async = r
	if a.jobs == nil {
		a.jobs = make(chan *asyncRead)
	}
	select {
	case a.jobs <- r: // an idle worker took it
		return p, true
	default:
	}
	if a.started < cap(a.workers) {
		a.started++
		a.running.Add(1)
		go a.work(r)
		return p, true
	}
	a.jobs <- r // a worker is done and on its way back
	return p, true
}

// work reads first, then every frame start hands it, until stop.
func (a *readAhead) work(first *asyncRead) {
	defer a.running.Done()
	for r := first; r != nil; {
		r.read = a.prepare(r.f)
		r.f = nil
		close(r.done)
		<-a.workers
		var ok bool
		if r, ok = <-a.jobs; !ok {
			return
		}
	}
}

// stop ends the workers once they finish the frames they took. It runs on
// the reader goroutine, after its last start.
func (a *readAhead) stop() {
	if a.jobs != nil {
		close(a.jobs)
	}
}

// prepare reads f with the dialect its session is expected to use.
func (a *readAhead) prepare(f *pb.AcpFrame) *normalize.Prepared {
	a.mu.Lock()
	expected := a.next[f.GetSessionId()]
	a.mu.Unlock()
	return normalize.PrepareIn(a.space, f.GetMessage(), f.GetDialect(), expected)
}

// wait returns the read of p once it is done, or false when ctx ended
// first.
func (p pending) wait(ctx context.Context) (*normalize.Prepared, bool) {
	if r := p.async; r != nil {
		// Most reads are done when the loop comes to them: a look at done
		// (no lock) spares the select, which locks both channels.
		if !closed(r.done) {
			select {
			case <-r.done:
			case <-ctx.Done():
				return nil, false
			}
		}
		return r.read, true
	}
	return p.read, true
}

// learn records the dialect the session of an applied request reads its
// next frame with ("": forget the session).
func (a *readAhead) learn(req *pb.NormalizeRequest, next string) {
	id := req.GetFrame().GetSessionId()
	if c := req.GetSessionClosed(); c != nil {
		id, next = c.GetSessionId(), ""
	}
	if id == "" {
		return
	}
	if next != "" && id == a.learnt && next == a.learntAs && len(a.next) < maxAheadSessions {
		// What next holds for id already (most frames are of the session
		// before), and no bound to start over at. Only this goroutine
		// writes next, so its length is read without the lock.
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.learnt, a.learntAs = "", ""
	if next == "" {
		delete(a.next, id)
		return
	}
	if len(a.next) >= maxAheadSessions {
		clear(a.next)
	}
	a.next[id] = next
	a.learnt, a.learntAs = id, next
}
