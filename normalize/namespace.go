package normalize

import (
	"encoding/binary"
	"sync/atomic"
)

// Namespaces keep the sessions of several tenants of one Normalizer apart:
// the same session id in two namespaces is two sessions, and a request in
// one never reads, changes, reopens or learns of another's sessions (their
// calls, terminals, asks, tombstones and applied sequences). Every state
// keyed by a session is keyed by the session's key, which holds its
// namespace: in memory, in the tombstones and in a store.
//
// A session of the default namespace ("") keeps its id as its key, the
// key sessions had before namespaces existed, so that the sessions a store
// holds for an older build are still found. The only exception is an id
// whose first byte is 0xFF (never valid UTF-8, so never a session id the
// service accepts), which is escaped. A session of namespace ns has the key
//
//	0xFF, uvarint(len(ns)), ns, id
//
// whose second byte is never 0, the escape's: no two (namespace, id) pairs
// share a key, whatever their bytes.

// keyMark starts every key that is not a default-namespace id as it is.
const keyMark = 0xff

// namespace is what a Normalizer view needs to find its sessions.
type namespace struct {
	name   string
	prefix string // what every key of the namespace starts with ("" for the default one)
}

func newNamespace(name string) namespace {
	if name == "" {
		return namespace{}
	}
	b := binary.AppendUvarint([]byte{keyMark}, uint64(len(name)))
	return namespace{name: name, prefix: string(b) + name}
}

// key is the key of the namespace's session id.
func (ns namespace) key(id string) string {
	if ns.prefix == "" {
		if len(id) > 0 && id[0] == keyMark {
			return string([]byte{keyMark, 0}) + id
		}
		return id
	}
	return ns.prefix + id
}

// spaceOfKey returns the namespace part of a session key (see key): ""
// for the default namespace.
func spaceOfKey(key string) string {
	if len(key) < 2 || key[0] != keyMark || key[1] == 0 {
		return ""
	}
	n, w := binary.Uvarint([]byte(key[1:min(len(key), 1+binary.MaxVarintLen64)]))
	if w <= 0 || n > uint64(len(key)-1-w) {
		return "" // never made by key
	}
	return key[:1+w+int(n)]
}

// space is the state of one namespace that holds sessions: its sessions
// (by id) and what they hold together, counted against its Quota. It
// exists while it holds a session.
type space struct {
	ns     namespace
	all    map[string]*session // guarded by sessions.mu
	calls  atomic.Int64        // calls held
	held   atomic.Int64        // bytes of text held
	floors atomic.Int64        // floors of lost calls held (see floorRoom)
}

// Namespace returns a view of n whose requests (Feed, FeedBatch,
// TurnEnded, CloseSession) and SessionStats are about the sessions of
// namespace name only; "" is the default namespace, the one n itself
// serves when it comes from New. A program serving several tenants gives
// each its own namespace instead of prefixing session ids: the same
// session id in two namespaces is two sessions, a request in one never
// reads, changes, reopens or learns of another's sessions, and a
// FrameError never names them. With a store (WithStore) the namespace is
// part of the session's key, so every Normalizer of the store keeps them
// apart too. WithQuota bounds what each namespace holds.
//
// A view shares everything else with n: the sessions of every namespace,
// the limits, Sweep, Run and Stats (which count the whole Normalizer). It
// is cheap to make and safe for concurrent use; Namespace of a view is a
// view of the same Normalizer (namespaces do not nest).
func (n *Normalizer) Namespace(name string) *Normalizer {
	return &Normalizer{ss: n.ss, ns: newNamespace(name)}
}

// Quota bounds what one namespace (see Namespace) may hold, so that a
// tenant at its limit leaves the others room: Sessions (with a store, the
// sessions it has cached, see WithMaxSessions), Calls, and Memory (bytes
// of text its calls hold). A zero field sets no bound beyond the
// Normalizer's own limits. The default namespace has the same quota as
// any other.
type Quota struct {
	Sessions int
	Calls    int
	Memory   int
}

// WithQuota bounds what each namespace may hold (see Quota). A frame that
// would take a namespace past its quota is refused as the matching global
// limit refuses (ResourceExhausted, naming the quota: LimitQuotaSessions,
// LimitQuotaCalls, LimitQuotaMemory); the other namespaces go on. By
// default there is no quota.
func WithQuota(q Quota) Option { return func(c *config) { c.quota = q } }
