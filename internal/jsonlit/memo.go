package jsonlit

import (
	"bytes"
	"sync"
	"unsafe"
)

// An agent that re-sends a call's whole output on every update sends, as
// its content text, a literal that begins with the bytes of the previous
// one. The memo keeps, per call, the previous content text literal (its
// raw bytes up to the last offset where decoding does not depend on what
// follows: decoded.clean) and its decoded text, so that the next literal
// is compared with those bytes (memory speed: bytes.Equal) instead of being
// validated and decoded again, and only what follows them is decoded. The
// decoded text grows in place: a string handed out keeps referring to the
// bytes it was given, which are never written again; new bytes go after
// them, or into a new array when they do not fit or the text changed.
//
// A byte array re-sent whole (Grok's outputs) is memoised the same way
// (memoDecodeArray): its bytes up to its last comma and what they decode
// to; the bytes it hands out are a copy.
//
// A literal that does not begin with the kept bytes is decoded whole, as
// without the memo, and replaces them. Only equal bytes are skipped, and
// those were validated when they were first decoded, so the memo changes
// no text and no refusal (TestMemoIsDecodeLiteral, FuzzMemoDecode): it is
// a cache of DecodeLiteral, keyed by the scope the caller names (acpnormd:
// the identity), the frame's own session id and tool call id, and the
// first bytes of the text, whose entries hold only what frames sent. A
// frame of one scope never reads, extends or replaces an entry of another
// (TestMemoScopesApart).
//
// Both grow as append grows them (by about a quarter past a few hundred
// bytes), not by doubling: an entry holds its literal and its text with at
// most about a quarter more room each (TestMemoKeepsAGrowingOutput), so a
// call's output of up to about memoBudget/5 bytes (6.4 MiB) stays within
// the bound below instead of being dropped and decoded from scratch on
// every update.
//
// It is bounded: literals of at least memoMin bytes only, at most
// memoBudget bytes of kept literals and texts in all (an entry bigger than
// half of it is not kept). When it is full, the least recently used entry
// of the scope that holds the most bytes leaves first, so that one scope
// sending big texts pushes out its own entries before another's
// (TestMemoEvictsTheBiggestScope).

var (
	memoMin    = 64 << 10
	memoBudget = 32 << 20
)

// SetMemoSizes sets the smallest literal the memo keeps and the bytes it
// may hold, and returns what restores the sizes before it. It is for
// tests (0 and a small budget: keep every literal), which must not run in
// parallel with other reads.
func SetMemoSizes(smallest, budget int) (restore func()) {
	lo, bu := memoMin, memoBudget
	memoMin, memoBudget = smallest, budget
	return func() { memoMin, memoBudget = lo, bu }
}

// memoKeyText is how many bytes of the literal the key holds.
const memoKeyText = 64

type memoEntry struct {
	mu       sync.Mutex
	key      memoKey
	raw      []byte // the last literal, from its opening quote to its last clean offset (an array: to just past its last comma)
	cleanOut int    // the length of raw's decoded text
	text     []byte // the last literal's decoded text; every byte of it may be in a string handed out (an array's: the bytes raw decodes to, never handed out)

	// Under memoTable.mu:
	size    int    // cap(raw)+cap(text) as counted in memoTable.total
	used    uint64 // the clock at the last use
	evicted bool
}

var memoTable struct {
	mu      sync.Mutex
	entries map[memoKey]*memoEntry
	total   int
	scopes  map[string]int // the bytes each scope's entries hold
	clock   uint64
}

// A memoKey is the key of a content text literal or a byte array: the
// scope, then what names the call in the frame (and the value's first
// bytes: a literal's '"' and an array's '[' keep the two apart).
type memoKey struct {
	scope string
	call  string
}

// memoKeyOf is the key of the content text literal or byte array lit of
// a frame of scope whose session id and tool call id literals are sid and
// tcid.
func memoKeyOf(scope string, sid, tcid, lit []byte) memoKey {
	k := make([]byte, 0, len(sid)+len(tcid)+2+memoKeyText)
	k = append(append(append(append(k, sid...), 0), tcid...), 0)
	return memoKey{scope, string(append(k, lit[:min(len(lit), memoKeyText)]...))}
}

// memoHit reads b with extend on the entry of key, under the entry's lock,
// when there is one (e, nil otherwise); hit says extend read it.
func memoHit[T any](key memoKey, b []byte, extend func(*memoEntry, []byte) (T, int, bool, bool)) (e *memoEntry, v T, n int, ok, hit bool) {
	if e = memoLookup(key, false); e != nil {
		e.mu.Lock()
		v, n, ok, hit = extend(e, b)
		e.mu.Unlock()
	}
	return e, v, n, ok, hit
}

// memoDecode is DecodeLiteral(b) through the memo entry of key.
func memoDecode(key memoKey, b []byte) (text string, n int, ok bool) {
	e, text, n, ok, hit := memoHit(key, b, memoExtend)
	if hit {
		return text, n, ok
	}
	// Sized to the literal (decodeFrom), not to the rest of the frame:
	// what later snapshots add is appended (memoExtend).
	d := decodeFrom(nil, b, 1)
	if !d.ok {
		return "", 0, false
	}
	if d.end >= memoMin && cap(d.out) > len(d.out)+len(d.out)/4 {
		// The literal held escapes: keep no more room than append does.
		d.out = bytes.Clone(d.out)
	}
	text = memoString(d.out)
	if d.end >= memoMin {
		if e == nil {
			e = memoLookup(key, true)
		}
		e.mu.Lock()
		e.text = d.out
		e.raw = bytes.Clone(b[:d.clean])
		e.cleanOut = d.cleanOut
		memoAccount(e)
		e.mu.Unlock()
	}
	return text, d.end, true
}

// memoExtend reads b when it begins with the literal e kept (hit); e.mu
// is held.
func memoExtend(e *memoEntry, b []byte) (text string, n int, ok, hit bool) {
	p := len(e.raw)
	if p <= 1 || p > len(b) || !equalFromEnd(b[:p], e.raw) {
		return "", 0, false, false
	}
	// b[:p] was decoded before, to e.text[:e.cleanOut].
	d := decodeFrom(nil, b, p)
	if !d.ok {
		return "", 0, false, true
	}
	base, handed := e.cleanOut, len(e.text)
	if over := handed - base; len(d.out) >= over && bytes.Equal(d.out[:over], e.text[base:handed]) {
		// Only after what was handed out, or (append, when it does not
		// fit) in a new array.
		e.text = append(e.text, d.out[over:]...)
	} else {
		e.text = append(e.text[:base:base], d.out...) // a new array
	}
	if d.clean > 0 {
		e.raw = append(e.raw, b[p:d.clean]...)
		e.cleanOut = base + d.cleanOut
	}
	text = memoString(e.text)
	memoAccount(e)
	return text, d.end, true, true
}

// memoDecodeArray is DecodeByteArray(b) through the memo entry of key: a
// byte array re-sent whole on every update (Grok's outputs) begins with
// the elements of the previous one. The entry keeps the array's bytes up
// to its last comma (raw) and the bytes they decode to (text, cleanOut of
// them); what it hands out is a copy, which the caller may change.
func memoDecodeArray(key memoKey, b []byte) (out []byte, n int, ok bool) {
	e, out, n, ok, hit := memoHit(key, b, memoExtendArray)
	if hit {
		return out, n, ok
	}
	out, n, comma, ok := decodeByteArray(b)
	if !ok || n < memoMin || comma == 0 {
		return out, n, ok
	}
	if e == nil {
		e = memoLookup(key, true)
	}
	e.mu.Lock()
	// After the last comma comes one element: every byte but the last
	// is decoded from what comes before it.
	e.raw = bytes.Clone(b[:comma])
	e.text = bytes.Clone(out[:len(out)-1])
	e.cleanOut = len(e.text)
	memoAccount(e)
	e.mu.Unlock()
	return out, n, ok
}

// memoExtendArray reads the array b when it begins with the bytes e kept
// (hit); e.mu is held.
func memoExtendArray(e *memoEntry, b []byte) (out []byte, n int, ok, hit bool) {
	p := len(e.raw)
	if p <= 1 || p > len(b) || !equalFromEnd(b[:p], e.raw) {
		return nil, 0, false, false
	}
	// b[:p] was decoded before, to e.text[:e.cleanOut], and ends with a
	// comma: an element is due.
	out, n, comma, ok := decodeArrayFrom(e.text[:e.cleanOut], b, p)
	if !ok {
		return nil, 0, false, true
	}
	if comma > 0 {
		e.raw = append(e.raw, b[p:comma]...)
		e.text = append(e.text[:e.cleanOut], out[e.cleanOut:len(out)-1]...)
		e.cleanOut = len(e.text)
		memoAccount(e)
	}
	return out, n, true, true
}

// equalFromEnd is bytes.Equal(a, b), comparing blocks from the last to
// the first: a frame's end is what its reader wrote last, so it is the
// part most likely to be still in the cache.
func equalFromEnd(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	const block = 64 << 10
	for end := len(a); end > 0; end -= block {
		start := max(end-block, 0)
		if !bytes.Equal(a[start:end], b[start:end]) {
			return false
		}
	}
	return true
}

func memoString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// memoLookup returns the entry of key: nil when there is none, unless
// make says to make one.
func memoLookup(key memoKey, make bool) *memoEntry {
	t := &memoTable
	t.mu.Lock()
	defer t.mu.Unlock()
	t.clock++
	e := t.entries[key]
	if e == nil && make {
		if t.entries == nil {
			t.entries = map[memoKey]*memoEntry{}
			t.scopes = map[string]int{}
		}
		e = &memoEntry{key: key}
		t.entries[key] = e
	}
	if e != nil {
		e.used = t.clock
	}
	return e
}

// memoAccount counts e's new size and keeps the table within its budget.
// e.mu is held.
func memoAccount(e *memoEntry) {
	t := &memoTable
	size := cap(e.raw) + cap(e.text)
	t.mu.Lock()
	defer t.mu.Unlock()
	if e.evicted {
		return
	}
	t.total += size - e.size
	t.scopes[e.key.scope] += size - e.size
	e.size = size
	if size > memoBudget/2 {
		memoEvict(e)
		e.raw, e.text = nil, nil
		return
	}
	for t.total > memoBudget {
		oldest := memoVictim(e)
		if oldest == nil {
			break
		}
		memoEvict(oldest)
	}
}

// memoVictim returns the least recently used entry other than e of the
// scope that holds the most bytes among those with such an entry; t.mu is
// held. The table holds at most memoBudget/memoMin entries, so one walk of
// it is cheap next to decoding the literal that made it full.
func memoVictim(e *memoEntry) *memoEntry {
	t := &memoTable
	oldest := map[string]*memoEntry{}
	for _, o := range t.entries {
		if p := oldest[o.key.scope]; o != e && (p == nil || o.used < p.used) {
			oldest[o.key.scope] = o
		}
	}
	var victim *memoEntry
	for scope, o := range oldest {
		if victim == nil || t.scopes[scope] > t.scopes[victim.key.scope] ||
			t.scopes[scope] == t.scopes[victim.key.scope] && o.used < victim.used {
			victim = o
		}
	}
	return victim
}

// memoEvict takes e out of the table; t.mu is held. What e holds is
// dropped by whoever holds e.mu (strings handed out keep their bytes).
func memoEvict(e *memoEntry) {
	t := &memoTable
	delete(t.entries, e.key)
	t.total -= e.size
	if t.scopes[e.key.scope] -= e.size; t.scopes[e.key.scope] == 0 {
		delete(t.scopes, e.key.scope)
	}
	e.size = 0
	e.evicted = true
}
