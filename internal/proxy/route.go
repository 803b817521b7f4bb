package proxy

import (
	"fmt"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
)

// A frame is one line ready for normalization.
type frame struct {
	seq uint64
	dir pb.Direction
	msg []byte
}

// held is f with a copy of its message, for the router to keep (the
// message's buffer goes back to the pool once the frame is handled).
func (f frame) held() frame {
	f.msg = append([]byte(nil), f.msg...)
	return f
}

// routed is a frame for one session.
type routed struct {
	session string
	frame
}

// Bounds of what the router holds.
const (
	maxSessions  = 256  // sessions of one agent; later ones go to the last
	maxPreamble  = 64   // frames before any session (initialize, authenticate)
	maxPending   = 4096 // open requests whose answer is still to route
	maxHeldNew   = 16   // session/new requests waiting for their answer
	preambleSize = 4 << 20
)

// router sends each frame to the session it belongs to. ACP multiplexes
// sessions over one agent connection: a frame names its session in
// params.sessionId, or answers a request that did, or is the answer to a
// session/new that names a new one. Each ACP session is its own acpnorm
// session, so that one session's turn ending never ends another's calls.
// Frames before any session (initialize, authenticate) are held and fed
// first to every session, as they tell the dialect (the first session/new
// request goes only to the session it made). A frame that names no
// session goes to the last session used.
//
// For an agent with one session every frame goes to it in wire order, as
// `acpnormd replay` plays a recording.
type router struct {
	name string // --session: names the first session, later ones name-2, ...

	ids      map[string]string // ACP session id -> acpnorm session id
	order    []string          // acpnorm session ids, first seen first
	last     string            // the acpnorm session used last
	preamble []frame           // every frame before the first session, for it
	shared   []int             // those of them for every later session (not session/new)
	preSize  int

	clientReqs map[string]string // client->agent request id -> ACP session
	agentReqs  map[string]string // agent->client request id -> ACP session
	heldNew    map[string]frame  // session/new requests by id, before their answer

	overflow bool // more sessions than maxSessions were seen
}

func newRouter(name string) *router {
	return &router{
		name: name, ids: map[string]string{},
		clientReqs: map[string]string{}, agentReqs: map[string]string{}, heldNew: map[string]frame{},
	}
}

// sessions returns every acpnorm session started, first seen first.
func (r *router) sessions() []string { return r.order }

// route returns where f goes: nothing (held), or one or more frames, in the
// order they must be fed.
func (r *router) route(f frame, env *envelope) []routed {
	id := env.id
	isRequest := env.method != "" && id != "" && id != "null"
	isResponse := env.method == "" && id != "" && id != "null"
	toAgent := f.dir == pb.Direction_DIRECTION_CLIENT_TO_AGENT

	if sid := env.paramsSession; sid != "" && env.method != "" {
		if isRequest {
			remember(r.reqs(toAgent), id, sid)
		}
		return r.to(sid, f)
	}
	if isRequest && toAgent && env.method == "session/new" && len(r.order) > 0 {
		// The answer names the session; until then the request (with its
		// cwd) waits, so that it goes to the new session, not the last.
		if len(r.heldNew) < maxHeldNew {
			r.heldNew[id] = f.held()
			return nil
		}
	}
	if isResponse {
		reqs := r.reqs(!toAgent) // an answer goes the other way
		if sid, ok := reqs[id]; ok {
			delete(reqs, id)
			return r.to(sid, f)
		}
		if sid := env.resultSession; sid != "" {
			var out []routed
			if held, ok := r.heldNew[id]; ok && !toAgent {
				delete(r.heldNew, id)
				out = r.to(sid, held)
			}
			return append(out, r.to(sid, f)...)
		}
	}
	if len(r.order) == 0 {
		if len(r.preamble) < maxPreamble && r.preSize+len(f.msg) <= preambleSize {
			r.preamble = append(r.preamble, f.held())
			r.preSize += len(f.msg)
			if env.method != "session/new" {
				r.shared = append(r.shared, len(r.preamble)-1)
			}
		}
		return nil
	}
	return []routed{{r.last, f}}
}

func (r *router) reqs(toAgent bool) map[string]string {
	if toAgent {
		return r.clientReqs
	}
	return r.agentReqs
}

func remember(m map[string]string, id, sid string) {
	if len(m) >= maxPending {
		clear(m) // requests never answered: forget them rather than grow
	}
	m[id] = sid
}

// to routes f to the ACP session sid, starting it (preamble first) when it
// is new.
func (r *router) to(sid string, f frame) []routed {
	name, ok := r.ids[sid]
	if ok {
		r.last = name
		return []routed{{name, f}}
	}
	if len(r.order) >= maxSessions {
		r.overflow = true
		return []routed{{r.last, f}}
	}
	switch {
	case r.name == "":
		name = sid
	case len(r.order) == 0:
		name = r.name
	default:
		name = fmt.Sprintf("%s-%d", r.name, len(r.order)+1)
	}
	r.ids[sid] = name
	r.order = append(r.order, name)
	r.last = name
	var out []routed
	if len(r.order) == 1 {
		for _, p := range r.preamble {
			out = append(out, routed{name, p})
		}
	} else {
		for _, i := range r.shared {
			out = append(out, routed{name, r.preamble[i]})
		}
	}
	return append(out, routed{name, f})
}
