package accum

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/acpnorm/acpnorm/internal/wire"
)

// A Call's state can be stored outside the process and continued by
// another one: AppendState encodes everything about the call except the
// text its streams hold, TakeSync says how that text changed since it was
// last stored, and RestoreCall rebuilds the call from the two. A call
// restored from (AppendState, the streams with every TakeSync applied)
// behaves exactly like the original on every later observation.
//
// The encoding is compact binary: a format version byte, then
// encoding/binary varints and length-prefixed strings. Nothing cached (the
// prepared echo pattern) is stored; it is rebuilt when needed.

// StateVersion is the latest format of an encoded call state (its first
// byte) this build reads. A state is written in the earliest format that
// holds it (see AppendState), so that a build one format behind reads
// every state but those that need the later one.
const StateVersion = stateVersion

const stateVersion = 2

// Format versions: heldVersion adds to held words their failure (the
// held flag heldFailed and its notice) and their texts' IfSplit,
// TrimmedEnd and Raw; earlier states are firstVersion.
const (
	firstVersion = 1
	heldVersion  = 2
)

// ErrNewerState (wrapped) says a call state was encoded by a later build,
// in a format version this one does not read: it is not corrupt, and is
// left for a build that reads it. Versions go up by one a change, so only
// the next newerVersions are read so; a byte beyond is corrupt.
var ErrNewerState = errors.New("written by a newer build")

const newerVersions = 8

// MaxStateLimit is the largest text limit RestoreCall accepts: a state
// that claims more is taken as corrupt rather than trusted with that much
// memory (a restored stream allocates up to 1.5 times its limit).
const MaxStateLimit = 64 << 20

// Sync is how one stream's held text changed since the previous TakeSync
// (or since the call was made or restored), for a copy of the stream kept
// elsewhere (the stored stream).
type Sync struct {
	// Changed says the stored stream must change; when false the other
	// fields are zero.
	Changed bool
	// Replace says the stored stream becomes Data, the whole held text.
	// Otherwise Data is appended to it, and the held text is the last
	// bytes of the result (as many as the state records).
	Replace bool
	// Data is the call's own copy: the caller may keep it.
	Data []byte
}

// TakeSync returns, per stream, how its held text changed since the
// previous TakeSync, and marks it stored. A stored stream that applies
// every Sync in order (append, or replace) ends with the held text and is
// never longer than twice the call's text limit (a Sync that would make it
// longer is a Replace), so the cost is O(new text), amortized.
func (c *Call) TakeSync() [NumStreams]Sync {
	var out [NumStreams]Sync
	for s, b := range c.streams {
		if b != nil {
			out[s] = b.takeSync()
		}
	}
	return out
}

// syncPlan says what the next takeSync returns: nothing (n == 0 and not
// replace), n bytes to append, or a replace with the held text.
func (b *Buffer) syncPlan() (replace bool, n int) {
	h := int64(len(b.data) - b.off)
	switch {
	case b.syncReplace || b.syncAppend > h || b.stored+b.syncAppend > 2*int64(b.limit):
		return true, int(h)
	}
	return false, int(b.syncAppend)
}

// storedAfterSync is the length of the stored stream once the pending
// change is taken.
func (b *Buffer) storedAfterSync() int64 {
	if replace, n := b.syncPlan(); replace {
		return int64(n)
	}
	return b.stored + b.syncAppend
}

func (b *Buffer) takeSync() Sync {
	replace, n := b.syncPlan()
	if !replace && n == 0 {
		return Sync{}
	}
	held := b.held()
	s := Sync{Changed: true, Replace: replace, Data: append([]byte(nil), held[len(held)-n:]...)}
	if replace {
		b.stored = int64(n)
	} else {
		b.stored += int64(n)
	}
	b.syncReplace, b.syncAppend = false, 0
	return s
}

// Bits of the flag words in an encoded state.
const (
	callCancelled = 1 << iota
	callCancelAsked
	callStatusFailed
	callVerdictFailed
	callFailed
	callSucceeded
	callHasExit
	callExitPlaceholder
	callCommandRan
	callExitSetAside
	callRawOutput
	callCommandFromTitle
	callWordedExit
	callWordedRestore
	callHeldWords
)

// Bits of the flag word of held words (Call.held).
const (
	heldCancelled = 1 << iota
	heldTimedOut
	heldBackground
	heldHasExit
	heldTruncated // of one held text
	heldHead      // of one held text
	heldFailed    // from heldVersion
	heldIfSplit   // of one held text, from heldVersion
	heldTrimmed   // of one held text (TrimmedEnd), from heldVersion
	heldRaw       // of one held text, from heldVersion
)

const (
	bufProducerTrunc = 1 << iota
	bufSeen
	bufReported
	bufReportedTrunc
	bufPendingReplace
	bufRolled // a rolling producer's start follows
)

const (
	metaTimedOut = 1 << iota
	metaBackground
	metaAwaiting
)

const (
	echoHeldBytes = 1 << iota
	echoHeldTrunc
	echoHasSnap
	snapHasBytes
	snapTruncated
	snapHead
	snapIfSplit
	snapTrimmedEnd
)

// AppendState appends the encoded state of the call to b and returns the
// extended slice: everything except the text its streams hold (see
// TakeSync). It may be called before or after TakeSync: it records the
// stored streams as they are once the pending Syncs are applied. Its cost
// is the size of the call's strings and held-back echo text, never the
// held output.
func (c *Call) AppendState(b []byte) []byte {
	v := byte(firstVersion)
	if c.held != nil && c.held.needsHeldVersion() {
		v = heldVersion
	}
	b = append(b, v)
	b = wire.AppendString(b, c.id)
	b = binary.AppendVarint(b, int64(c.limit))
	b = append(b, byte(c.shell))
	b = appendMeta(b, &c.cur)
	b = appendMeta(b, &c.sent)
	b = binary.AppendUvarint(b, uint64(c.revision))
	var flags uint64
	setBit(&flags, callCancelled, c.cancelled)
	setBit(&flags, callCancelAsked, c.cancelAsked)
	setBit(&flags, callStatusFailed, c.statusFailed)
	setBit(&flags, callVerdictFailed, c.verdictFailed)
	setBit(&flags, callFailed, c.failed)
	setBit(&flags, callSucceeded, c.succeeded)
	setBit(&flags, callHasExit, c.exit != nil)
	setBit(&flags, callExitPlaceholder, c.exit != nil && c.exit.Placeholder)
	setBit(&flags, callCommandRan, c.commandRan)
	setBit(&flags, callExitSetAside, c.exitSetAside)
	setBit(&flags, callRawOutput, c.rawOutput)
	setBit(&flags, callCommandFromTitle, c.commandFromTitle)
	setBit(&flags, callWordedExit, c.wordedExit != nil)
	setBit(&flags, callWordedRestore, c.wordedExit != nil && c.wordedExit.restore)
	setBit(&flags, callHeldWords, c.held != nil)
	b = binary.AppendUvarint(b, flags)
	if c.exit != nil {
		b = appendExit(b, c.exit)
	}
	b = wire.AppendString(b, c.cancelWhy)
	b = wire.AppendString(b, c.notice)
	b = wire.AppendString(b, c.endReason)
	if w := c.wordedExit; w != nil {
		b = binary.AppendVarint(b, int64(w.code))
		b = append(b, byte(w.stream))
		b = wire.AppendString(b, w.head)
		b = wire.AppendString(b, w.tail)
		b = binary.AppendUvarint(b, uint64(w.leftLen))
		b = binary.AppendUvarint(b, w.leftSum)
	}
	if h := c.held; h != nil {
		b = h.appendState(b)
	}
	var present byte
	for s, buf := range c.streams {
		if buf != nil {
			present |= 1 << s
		}
	}
	b = append(b, present)
	for s, buf := range c.streams {
		if buf != nil {
			b = buf.appendState(b)
		}
		b = c.echoes[s].appendState(b)
	}
	return b
}

// needsHeldVersion says whether h is written in heldVersion: it holds
// what the first format has no room for.
func (h *heldWords) needsHeldVersion() bool {
	if h.failed {
		return true
	}
	for _, t := range h.texts {
		if t.IfSplit || t.TrimmedEnd || t.Raw {
			return true
		}
	}
	return false
}

func (h *heldWords) appendState(p []byte) []byte {
	p = binary.AppendUvarint(p, uint64(len(h.texts)))
	for _, t := range h.texts {
		p = append(p, byte(t.Stream), byte(t.Kind))
		var flags uint64
		setBit(&flags, heldTruncated, t.Truncated)
		setBit(&flags, heldHead, t.Head)
		setBit(&flags, heldIfSplit, t.IfSplit)
		setBit(&flags, heldTrimmed, t.TrimmedEnd)
		setBit(&flags, heldRaw, t.Raw)
		p = binary.AppendUvarint(p, flags)
		p = wire.AppendString(p, t.Text)
		p = wire.AppendString(p, t.Whole)
		p = binary.AppendVarint(p, t.TotalBytes)
	}
	var flags uint64
	setBit(&flags, heldCancelled, h.cancelled)
	setBit(&flags, heldTimedOut, h.timedOut)
	setBit(&flags, heldBackground, h.background)
	setBit(&flags, heldHasExit, h.exit != nil)
	setBit(&flags, heldFailed, h.failed)
	p = binary.AppendUvarint(p, flags)
	p = wire.AppendString(p, h.notice)
	p = wire.AppendString(p, h.signal)
	if h.exit != nil {
		p = appendExit(p, h.exit)
	}
	if h.failed {
		p = wire.AppendString(p, h.failNotice)
	}
	return p
}

func (b *Buffer) appendState(p []byte) []byte {
	var flags uint64
	setBit(&flags, bufProducerTrunc, b.producerTrunc)
	setBit(&flags, bufSeen, b.seen)
	setBit(&flags, bufReported, b.reported)
	setBit(&flags, bufReportedTrunc, b.reportedTrunc)
	setBit(&flags, bufPendingReplace, b.pendingReplace)
	setBit(&flags, bufRolled, b.rollFrom != 0)
	p = binary.AppendUvarint(p, flags)
	if b.rollFrom != 0 {
		p = binary.AppendUvarint(p, uint64(b.rollFrom))
	}
	p = binary.AppendUvarint(p, uint64(b.total))
	p = binary.AppendUvarint(p, uint64(b.claimed))
	p = binary.AppendUvarint(p, uint64(b.pendingAppend))
	p = wire.AppendBytes(p, b.carry[:b.ncarry])
	p = binary.AppendUvarint(p, uint64(len(b.data)-b.off)) // held length
	p = binary.AppendUvarint(p, uint64(b.off))
	p = binary.AppendUvarint(p, uint64(cap(b.data)))
	p = binary.AppendUvarint(p, uint64(b.storedAfterSync()))
	return p
}

func (f *echoFilter) appendState(p []byte) []byte {
	p = append(p, byte(f.state))
	var flags uint64
	setBit(&flags, echoHeldBytes, f.heldBytes)
	setBit(&flags, echoHeldTrunc, f.heldTrunc)
	if t := f.heldSnap; t != nil {
		setBit(&flags, echoHasSnap, true)
		setBit(&flags, snapHasBytes, t.Bytes != nil)
		setBit(&flags, snapTruncated, t.Truncated)
		setBit(&flags, snapHead, t.Head)
		setBit(&flags, snapIfSplit, t.IfSplit)
		setBit(&flags, snapTrimmedEnd, t.TrimmedEnd)
	}
	p = binary.AppendUvarint(p, flags)
	p = wire.AppendBytes(p, f.held)
	if t := f.heldSnap; t != nil {
		p = append(p, byte(t.Stream), byte(t.Kind))
		p = wire.AppendString(p, t.Text)
		p = wire.AppendBytes(p, t.Bytes)
		p = binary.AppendVarint(p, t.TotalBytes)
	}
	return p
}

func appendMeta(p []byte, m *meta) []byte {
	p = wire.AppendString(p, m.terminalID)
	p = wire.AppendString(p, m.command)
	p = wire.AppendString(p, m.cwd)
	p = wire.AppendString(p, m.description)
	p = append(p, byte(m.state), byte(m.outcome))
	p = wire.AppendString(p, m.reason)
	p = binary.AppendVarint(p, m.exit)
	p = wire.AppendString(p, m.signal)
	var flags uint64
	setBit(&flags, metaTimedOut, m.timedOut)
	setBit(&flags, metaBackground, m.background)
	setBit(&flags, metaAwaiting, m.awaiting)
	p = binary.AppendUvarint(p, flags)
	p = wire.AppendString(p, m.approvalReason)
	return p
}

func setBit(flags *uint64, bit uint64, on bool) {
	if on {
		*flags |= bit
	}
}

// RestoreCall rebuilds a call from its encoded state (AppendState) and
// its stored streams (every Sync that TakeSync returned up to that state,
// applied in order). The restored call has nothing left to sync: its next
// TakeSync reports only what changes after the restore. Input that is not
// such a pair (corrupt, cut short, from another format version, or
// streams that do not match the state) is an error that names the
// problem, as is a text limit over MaxStateLimit. A state of a later
// format version than this build's wraps ErrNewerState. The streams are
// not kept: the call copies what it holds.
func RestoreCall(state []byte, streams [NumStreams][]byte) (*Call, error) {
	d := decoder{Reader: wire.Reader{B: state, Prefix: "call state: "}}
	if v := d.Byte("format version"); d.Err == nil && v > stateVersion && v <= stateVersion+newerVersions {
		return nil, fmt.Errorf("call state: format version %d, this build reads up to %d: %w", v, stateVersion, ErrNewerState)
	} else if d.Err == nil && (v < firstVersion || v > stateVersion) {
		return nil, fmt.Errorf("call state: format version %d, want %d to %d", v, firstVersion, stateVersion)
	} else {
		d.version = v
	}
	c := &Call{}
	c.id = d.String("call id")
	limit := d.Varint("text limit")
	if d.Err == nil && (limit < -MaxStateLimit || limit > MaxStateLimit) {
		d.Fail("text limit %d is out of range", limit)
	}
	c.limit = int(limit)
	c.shell = Shell(d.enum("shell", byte(ShellNo)))
	d.meta(&c.cur, "current")
	d.meta(&c.sent, "sent")
	rev := d.Uvarint("revision")
	if d.Err == nil && rev > math.MaxUint32 {
		d.Fail("revision %d is out of range", rev)
	}
	c.revision = uint32(rev)
	flags := d.Uvarint("call flags")
	if d.Err == nil && flags >= callHeldWords<<1 {
		d.Fail("unknown call flags %#x", flags)
	}
	c.cancelled = flags&callCancelled != 0
	c.cancelAsked = flags&callCancelAsked != 0
	c.statusFailed = flags&callStatusFailed != 0
	c.verdictFailed = flags&callVerdictFailed != 0
	c.failed = flags&callFailed != 0
	c.succeeded = flags&callSucceeded != 0
	c.commandRan = flags&callCommandRan != 0
	c.exitSetAside = flags&callExitSetAside != 0
	c.rawOutput = flags&callRawOutput != 0
	c.commandFromTitle = flags&callCommandFromTitle != 0
	if flags&callHasExit != 0 {
		c.exit = d.exit("exit")
		c.exit.Placeholder = flags&callExitPlaceholder != 0
	} else if flags&callExitPlaceholder != 0 {
		d.Fail("a placeholder flag without an exit code")
	}
	c.cancelWhy = d.String("cancel reason")
	c.notice = d.String("cancel notice")
	c.endReason = d.String("end reason")
	if flags&callWordedExit != 0 {
		c.wordedExit = d.wordedExit(flags&callWordedRestore != 0)
	} else if flags&callWordedRestore != 0 {
		d.Fail("a worded-exit restore flag without a worded exit")
	}
	if flags&callHeldWords != 0 {
		c.held = d.held()
	}
	present := d.Byte("stream set")
	if d.Err == nil && present >= 1<<NumStreams {
		d.Fail("stream set %#x names unknown streams", present)
	}
	for s := range NumStreams {
		if d.Err != nil {
			break
		}
		if present&(1<<s) != 0 {
			c.streams[s] = d.buffer(Stream(s), c.limit, streams[s])
		} else if len(streams[s]) > 0 {
			d.Fail("stream %d: %d stored bytes for a stream the call does not have", s, len(streams[s]))
		}
		d.echo(&c.echoes[s], Stream(s))
	}
	if d.Err == nil && len(d.B) > 0 {
		d.Fail("%d bytes after the end of the state", len(d.B))
	}
	if d.Err != nil {
		return nil, d.Err
	}
	return c, nil
}

// decoder reads an encoded call state (see package wire); its own
// methods read the call's parts.
type decoder struct {
	wire.Reader
	version byte // the state's format version
}

// exitCode reads an exit code, which must fit an int32.
func (d *decoder) exitCode(what string) int32 {
	code := d.Varint(what)
	if d.Err == nil && (code < math.MinInt32 || code > math.MaxInt32) {
		d.Fail("%s %d is out of range", what, code)
	}
	return int32(code)
}

// exit reads an Exit as appendExit wrote it ("<what> code", "<what>
// source"); its Placeholder is the caller's.
func (d *decoder) exit(what string) *Exit {
	code := d.exitCode(what + " code")
	return &Exit{Code: code, Source: ExitSource(d.enum(what+" source", byte(ExitClient)))}
}

// appendExit appends e's code and source (decoder.exit reads them).
func appendExit(p []byte, e *Exit) []byte {
	p = binary.AppendVarint(p, int64(e.Code))
	return append(p, byte(e.Source))
}

// wordedExit reads a Call's wordedExit.
func (d *decoder) wordedExit(restore bool) *wordedExit {
	w := &wordedExit{restore: restore}
	w.code = d.exitCode("worded exit code")
	w.stream = Stream(d.enum("worded exit stream", byte(NumStreams-1)))
	w.head = d.String("worded exit head")
	w.tail = d.String("worded exit tail")
	w.leftLen = int(d.Size("worded exit text length", MaxStateLimit))
	w.leftSum = d.Uvarint("worded exit checksum")
	return w
}

// enum reads a byte that must be at most max.
func (d *decoder) enum(what string, max byte) byte {
	v := d.Byte(what)
	if v > max {
		d.Fail("%s %d is not a known value", what, v)
		return 0
	}
	return v
}

func (d *decoder) meta(m *meta, which string) {
	m.terminalID = d.String(which + " terminal id")
	m.command = d.String(which + " command")
	m.cwd = d.String(which + " cwd")
	m.description = d.String(which + " description")
	m.state = State(d.enum(which+" state", byte(Ended)))
	m.outcome = Outcome(d.enum(which+" outcome", byte(Unknown)))
	m.reason = d.String(which + " outcome reason")
	m.exit = d.Varint(which + " exit code")
	if d.Err == nil && m.exit != noExit && (m.exit < math.MinInt32 || m.exit > math.MaxInt32) {
		d.Fail("%s exit code %d is out of range", which, m.exit)
	}
	m.signal = d.String(which + " signal")
	flags := d.Uvarint(which + " flags")
	if d.Err == nil && flags >= metaAwaiting<<1 {
		d.Fail("unknown %s flags %#x", which, flags)
	}
	m.timedOut = flags&metaTimedOut != 0
	m.background = flags&metaBackground != 0
	m.awaiting = flags&metaAwaiting != 0
	m.approvalReason = d.String(which + " approval reason")
}

// maxHeldTexts bounds the held texts a state may claim (a frame holds at
// most one per stream and kind).
const maxHeldTexts = 64

// held reads held words (Call.held).
func (d *decoder) held() *heldWords {
	h := &heldWords{}
	n := d.Size("held texts", maxHeldTexts)
	for range n {
		if d.Err != nil {
			return nil
		}
		var t Text
		t.Stream = Stream(d.enum("held text stream", byte(NumStreams-1)))
		t.Kind = TextKind(d.enum("held text kind", byte(Final)))
		flags := d.Uvarint("held text flags")
		known := uint64(heldTruncated | heldHead)
		if d.version >= heldVersion {
			known |= heldIfSplit | heldTrimmed | heldRaw
		}
		if d.Err == nil && flags&^known != 0 {
			d.Fail("unknown held text flags %#x", flags)
		}
		t.Truncated, t.Head = flags&heldTruncated != 0, flags&heldHead != 0
		t.IfSplit, t.TrimmedEnd, t.Raw = flags&heldIfSplit != 0, flags&heldTrimmed != 0, flags&heldRaw != 0
		t.Text = d.String("held text")
		t.Whole = d.String("held whole text")
		t.TotalBytes = d.Varint("held text total")
		h.texts = append(h.texts, t)
	}
	flags := d.Uvarint("held flags")
	known := uint64(heldCancelled | heldTimedOut | heldBackground | heldHasExit)
	if d.version >= heldVersion {
		known |= heldFailed
	}
	if d.Err == nil && flags&^known != 0 {
		d.Fail("unknown held flags %#x", flags)
	}
	h.cancelled, h.timedOut, h.background = flags&heldCancelled != 0, flags&heldTimedOut != 0, flags&heldBackground != 0
	h.notice = d.String("held notice")
	h.signal = d.String("held signal")
	if flags&heldHasExit != 0 {
		h.exit = d.exit("held exit")
	}
	if flags&heldFailed != 0 {
		h.failed = true
		h.failNotice = d.String("held failure notice")
	}
	if d.Err != nil {
		return nil
	}
	return h
}

// buffer reads a Buffer's state and takes its held text from the end of
// stored, checking each against the other.
func (d *decoder) buffer(s Stream, callLimit int, stored []byte) *Buffer {
	b := NewBuffer(callLimit)
	what := func(field string) string { return fmt.Sprintf("stream %d %s", s, field) }
	flags := d.Uvarint(what("flags"))
	if d.Err == nil && flags >= bufRolled<<1 {
		d.Fail("unknown stream %d flags %#x", s, flags)
	}
	if flags&bufRolled != 0 {
		b.rollFrom = d.Size(what("rolling start"), math.MaxInt64/2)
	}
	b.producerTrunc = flags&bufProducerTrunc != 0
	b.seen = flags&bufSeen != 0
	b.reported = flags&bufReported != 0
	b.reportedTrunc = flags&bufReportedTrunc != 0
	b.pendingReplace = flags&bufPendingReplace != 0
	b.total = d.Size(what("total"), math.MaxInt64/2)
	b.claimed = d.Size(what("claimed total"), math.MaxInt64/2)
	b.pendingAppend = d.Size(what("pending append"), math.MaxInt64/2)
	carry := d.Raw(what("held-back bytes"))
	if d.Err == nil && (len(carry) > len(b.carry) || len(carry) > 0 && incompleteTail(carry) != 0) {
		d.Fail("stream %d: held-back bytes %q are not the start of one UTF-8 sequence", s, carry)
	}
	b.ncarry = copy(b.carry[:], carry)
	maxCap := int64(b.maxCap())
	heldLen := d.Size(what("held length"), int64(b.limit))
	off := d.Size(what("offset"), maxCap)
	capacity := d.Size(what("capacity"), maxCap)
	storedLen := d.Size(what("stored length"), 2*int64(b.limit))
	if d.Err != nil {
		return nil
	}
	switch {
	case off+heldLen > capacity:
		d.Fail("stream %d: %d held bytes at offset %d overflow a capacity of %d", s, heldLen, off, capacity)
	case b.total < heldLen:
		d.Fail("stream %d: total of %d bytes is less than the %d held", s, b.total, heldLen)
	case b.rollFrom > b.total:
		d.Fail("stream %d: a rolling start at %d is past the total of %d bytes", s, b.rollFrom, b.total)
	case int64(len(stored)) != storedLen:
		d.Fail("stream %d: %d stored bytes, but the state says %d", s, len(stored), storedLen)
	case heldLen > storedLen:
		d.Fail("stream %d: %d held bytes, but only %d stored", s, heldLen, storedLen)
	}
	if d.Err != nil {
		return nil
	}
	held := stored[storedLen-heldLen:]
	if !utf8.Valid(held) {
		d.Fail("stream %d: the held text is not valid UTF-8 (or does not start on a rune)", s)
		return nil
	}
	if capacity > 0 {
		b.data = make([]byte, off+heldLen, capacity)
		copy(b.data[off:], held)
	}
	b.off = int(off)
	b.stored = storedLen
	return b
}

func (d *decoder) echo(f *echoFilter, s Stream) {
	f.state = echoState(d.enum(fmt.Sprintf("stream %d echo state", s), byte(echoFound)))
	flags := d.Uvarint(fmt.Sprintf("stream %d echo flags", s))
	if d.Err == nil && flags >= snapTrimmedEnd<<1 {
		d.Fail("unknown stream %d echo flags %#x", s, flags)
	}
	f.heldBytes = flags&echoHeldBytes != 0
	f.heldTrunc = flags&echoHeldTrunc != 0
	if held := d.Raw(fmt.Sprintf("stream %d echo text", s)); len(held) > 0 {
		f.held = append([]byte(nil), held...)
	}
	if flags&echoHasSnap == 0 {
		if d.Err == nil && flags&^(echoHeldBytes|echoHeldTrunc) != 0 {
			d.Fail("stream %d echo flags %#x describe a restatement it does not have", s, flags)
		}
		return
	}
	t := &Text{
		Stream:     Stream(d.Byte(fmt.Sprintf("stream %d echo restatement stream", s))),
		Kind:       TextKind(d.Byte(fmt.Sprintf("stream %d echo restatement kind", s))),
		Text:       d.String(fmt.Sprintf("stream %d echo restatement text", s)),
		Truncated:  flags&snapTruncated != 0,
		Head:       flags&snapHead != 0,
		IfSplit:    flags&snapIfSplit != 0,
		TrimmedEnd: flags&snapTrimmedEnd != 0,
	}
	raw := d.Raw(fmt.Sprintf("stream %d echo restatement bytes", s))
	if flags&snapHasBytes != 0 {
		t.Bytes = append([]byte{}, raw...)
	} else if d.Err == nil && len(raw) > 0 {
		d.Fail("stream %d echo restatement has bytes but says it has none", s)
	}
	t.TotalBytes = d.Varint(fmt.Sprintf("stream %d echo restatement total", s))
	if d.Err == nil && t.Stream != s {
		d.Fail("stream %d echo restatement names stream %d", s, t.Stream)
	}
	f.heldSnap = t
}
