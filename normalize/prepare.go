package normalize

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/acpnorm/acpnorm/internal/dialect"
)

// Prepared is a frame read ahead of its turn; see Prepare.
type Prepared struct {
	with  dialect.Dialect
	name  string // with's name (dialect.Info's Name, which allocates)
	frame dialect.Frame
	err   error
	space string // the namespace it was read in (see PrepareIn)
}

// Prepare reads a frame the way its session will read it, without taking
// any lock, so that a program can read the next frame of a stream on
// another goroutine while the Normalizer still applies the one before
// (reading, JSON decoding and unquoting outputs, is the larger part of a
// frame's work). It reads with the dialect named (what WithDialect will
// name), else the expected one (the name WithNextDialect reported for the
// session, or what WithNextReader reported, which names the agent's build
// too; "" for a session not seen), else the generic one. WithPrepared
// hands the result to Feed, which uses it when the session reads the frame
// with that same dialect, bound to the same build of the agent, and reads
// the frame again otherwise: reading is pure, so the result is the same
// either way. Prepare returns nil when
// there is nothing to read (an empty frame, an unknown dialect name).
// Prepare reads in the default namespace; see PrepareIn.
func Prepare(frame []byte, dialectName, expected string) *Prepared {
	return PrepareIn("", frame, dialectName, expected)
}

// PrepareIn is Prepare for a frame that a view of namespace (see
// Namespace) will be fed: reading keeps what it learns for later frames
// (the decode memo of big outputs) apart by namespace, so a frame read
// ahead in one namespace is used only by a Feed of the same namespace.
func PrepareIn(namespace string, frame []byte, dialectName, expected string) *Prepared {
	if len(frame) == 0 {
		return nil
	}
	var with dialect.Dialect
	var withName string
	if name := strings.TrimSpace(dialectName); name != "" && !strings.EqualFold(name, dialect.Auto) {
		d, ok := dialect.Lookup(name)
		if !ok {
			return nil
		}
		with, withName = d, lookedUp(name)
		if e, ok := boundReader(expected); ok && readerName(expected) == withName {
			with = e // the same dialect, bound to the agent's build
		}
	} else if d, ok := boundReader(expected); ok {
		with, withName = d, readerName(expected)
	} else {
		with, withName = dialect.Generic(), dialect.GenericName
	}
	fr, err := dialect.ReadIn(with, frame, namespace)
	return &Prepared{with: with, name: withName, frame: fr, err: err, space: namespace}
}

// lookedUp is the name of the dialect dialect.Lookup(name) found: the
// registry's key, which is the dialect's Info().Name. Unlike Info, it
// allocates nothing for a name already in lower case.
func lookedUp(name string) string { return strings.ToLower(strings.TrimSpace(name)) }

// readerName is the name of the dialect boundReader(id) found.
func readerName(id string) string {
	name, _, _ := strings.Cut(id, "\n")
	return lookedUp(name)
}

// Dialect is the name of the dialect the frame was read with.
func (p *Prepared) Dialect() string { return p.name }

// WithPrepared gives Feed the frame as Prepare read it ahead (nil: none).
func WithPrepared(p *Prepared) FeedOption { return func(r *request) { r.prepared = p } }

// WithNextDialect has Feed report, once the frame was read, the name of the
// dialect the session reads its next frame with (what Prepare expects).
func WithNextDialect(next func(name string)) FeedOption {
	return func(r *request) { r.nextDialect = next }
}

// WithNextReader has Feed report, once the frame was read, which dialect
// the session reads its next frame with, for which build of the agent and
// for what the client declared in its initialize request, as one opaque
// string that Prepare takes as expected. Prefer it to WithNextDialect: a
// frame read ahead for another build or client is read again.
func WithNextReader(next func(reader string)) FeedOption {
	return func(r *request) { r.nextReader = next }
}

// reportNext tells the request's WithNextDialect and WithNextReader which
// dialect reads the session's next frame.
func (r *reply) reportNext(req *request) {
	if r.next == nil {
		return
	}
	if req.nextDialect != nil {
		req.nextDialect(r.nextName)
	}
	if req.nextReader != nil {
		req.nextReader(r.nextReader)
	}
}

// bound caches the dialects bound to a build and a client by boundReader,
// by reader id, so that reading ahead binds once per build and client, not
// per frame. It holds at most maxBound entries (an id is at most a name,
// dialect.MaxVersionBytes and dialect.MaxClientBytes) and starts over past
// them.
var bound struct {
	sync.Mutex
	m map[string]*readerOf
}

const maxBound = 256

// readerOf is a reader id and the dialect it names, bound.
type readerOf struct {
	id string
	d  dialect.Dialect
}

// lastBound holds the entries of bound that boundReader answered last,
// one replaced in turn at each miss: the streams of a service read ahead
// frames of sessions that mostly share a few reader ids (an agent build
// and client each), and each frame's look-up otherwise took a registry
// look-up, the lock and a hash of the whole id (0.6-0.7% of the server's
// samples on two of bench/load's recording scenarios at c=8).
var (
	lastBound [8]atomic.Pointer[readerOf]
	nextBound atomic.Uint32
)

// keepBound makes e one of lastBound.
func keepBound(e *readerOf) {
	lastBound[nextBound.Add(1)%uint32(len(lastBound))].Store(e)
}

// boundReader returns the dialect a reader id (see session.readerID)
// names, bound to its build; a plain dialect name is the dialect itself.
func boundReader(id string) (dialect.Dialect, bool) {
	if id == "" {
		return nil, false
	}
	for i := range lastBound {
		if e := lastBound[i].Load(); e != nil && e.id == id {
			return e.d, true
		}
	}
	name, peers, withPeers := strings.Cut(id, "\n")
	d, ok := dialect.Lookup(name)
	if !ok || !withPeers {
		return d, ok
	}
	version, caps, _ := strings.Cut(peers, "\n")
	bound.Lock()
	defer bound.Unlock()
	if e, ok := bound.m[id]; ok {
		keepBound(e)
		return e.d, true
	}
	if bound.m == nil || len(bound.m) >= maxBound {
		bound.m = map[string]*readerOf{}
	}
	client, err := dialect.ParseClient([]byte(caps))
	if err != nil {
		return nil, false // not an id readerID made
	}
	e := &readerOf{id, dialect.BindPeers(d, dialect.ParseVersion(version), client)}
	bound.m[id] = e
	keepBound(e)
	return e.d, true
}

// readWith reads msg with dialect with (named withName), using the frame
// read ahead when it was read with the same dialect.
func (r *reply) readWith(with dialect.Dialect, withName string, msg []byte) (dialect.Frame, error) {
	if p := r.ahead; p != nil {
		r.ahead = nil
		if p.space == r.space() && p.name == withName && sameBinding(p.with, with) {
			return p.frame, p.err
		}
	}
	return dialect.ReadIn(with, msg, r.space())
}

// space is the namespace the request's frames are read in.
func (r *reply) space() string {
	if r.req == nil {
		return ""
	}
	return r.req.ns.name
}
