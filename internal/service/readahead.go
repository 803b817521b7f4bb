package service

import (
	"context"
	"runtime"
	"sync"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/normalize"
)

// readAhead lets a stream read its frames in parallel while the stream
// loop applies them one by one, in order: the reader goroutine starts
// reading each frame, with the dialect its session is expected to use, on
// a goroutine of its own (at most workers at once per stream), off every
// session lock (normalize.Prepare), and queues the request; the loop takes
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
	// workers holds a token for each read running on its own goroutine.
	workers chan struct{}
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
	// read is the frame read ahead on the reader's goroutine (nil: none,
	// or see async).
	read *normalize.Prepared
	// async is the frame being read ahead on a goroutine of its own, or
	// nil.
	async *asyncRead
}

// asyncRead is a frame read ahead on a goroutine of its own: read may be
// used only once done is closed.
type asyncRead struct {
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
	r := &asyncRead{done: make(chan struct{})}
	p.async = r
	go func() {
		defer func() { <-a.workers }()
		r.read = a.prepare(f)
		close(r.done)
	}()
	return p, true
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
		select {
		case <-r.done:
		case <-ctx.Done():
			return nil, false
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
	a.mu.Lock()
	defer a.mu.Unlock()
	if next == "" {
		delete(a.next, id)
		return
	}
	if len(a.next) >= maxAheadSessions {
		clear(a.next)
	}
	a.next[id] = next
}
