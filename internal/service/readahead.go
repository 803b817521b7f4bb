package service

import (
	"sync"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/normalize"
)

// readAhead lets a stream read its next frame while the stream loop still
// applies the one before: the reader goroutine reads each frame with the
// dialect its session is expected to use before it hands the request
// over, off every session lock (normalize.Prepare), and the loop applies
// the frames in order, using the read when the session's dialect is the
// one expected and reading the frame again otherwise. Reading a frame is
// pure, so either way the result is what reading it under the lock gives;
// reading (JSON decoding, unquoting outputs) is the larger part of a
// frame's work, and this way it runs on another core than the accumulation
// of the frame before.
type readAhead struct {
	mu    sync.Mutex
	reads map[*pb.NormalizeRequest]*normalize.Prepared
	// next is the dialect each session of the stream read its last
	// applied frame with, as the loop last saw it; the expected dialect.
	next map[string]string
}

// maxAheadSessions bounds the sessions a stream remembers the dialect of;
// past it the memory starts over (a frame read with the wrong dialect is
// only read again).
const maxAheadSessions = 1024

func newReadAhead() *readAhead {
	return &readAhead{reads: map[*pb.NormalizeRequest]*normalize.Prepared{}, next: map[string]string{}}
}

// read reads req ahead, when it is a frame that will be read: it runs on
// the reader goroutine.
func (a *readAhead) read(req *pb.NormalizeRequest) {
	f := req.GetFrame()
	if f == nil || f.GetSessionId() == "" || len(f.GetMessage()) == 0 {
		return
	}
	a.mu.Lock()
	expected := a.next[f.GetSessionId()]
	a.mu.Unlock()
	p := normalize.Prepare(f.GetMessage(), f.GetDialect(), expected)
	if p == nil {
		return
	}
	a.mu.Lock()
	a.reads[req] = p
	a.mu.Unlock()
}

// take returns the read of req, if it was read ahead, and forgets it.
func (a *readAhead) take(req *pb.NormalizeRequest) *normalize.Prepared {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.reads[req]
	delete(a.reads, req)
	return r
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
