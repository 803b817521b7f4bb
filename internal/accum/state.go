package accum

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unicode/utf8"
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

// stateVersion is the first byte of an encoded call state.
const stateVersion = 1

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
)

const (
	bufProducerTrunc = 1 << iota
	bufSeen
	bufReported
	bufReportedTrunc
	bufPendingReplace
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
)

// AppendState appends the encoded state of the call to b and returns the
// extended slice: everything except the text its streams hold (see
// TakeSync). It may be called before or after TakeSync: it records the
// stored streams as they are once the pending Syncs are applied. Its cost
// is the size of the call's strings and held-back echo text, never the
// held output.
func (c *Call) AppendState(b []byte) []byte {
	b = append(b, stateVersion)
	b = appendString(b, c.id)
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
	b = binary.AppendUvarint(b, flags)
	if c.exit != nil {
		b = binary.AppendVarint(b, int64(c.exit.Code))
		b = append(b, byte(c.exit.Source))
	}
	b = appendString(b, c.cancelWhy)
	b = appendString(b, c.cancelNotice)
	b = appendString(b, c.endReason)
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

func (b *Buffer) appendState(p []byte) []byte {
	var flags uint64
	setBit(&flags, bufProducerTrunc, b.producerTrunc)
	setBit(&flags, bufSeen, b.seen)
	setBit(&flags, bufReported, b.reported)
	setBit(&flags, bufReportedTrunc, b.reportedTrunc)
	setBit(&flags, bufPendingReplace, b.pendingReplace)
	p = binary.AppendUvarint(p, flags)
	p = binary.AppendUvarint(p, uint64(b.total))
	p = binary.AppendUvarint(p, uint64(b.claimed))
	p = binary.AppendUvarint(p, uint64(b.pendingAppend))
	p = appendBytes(p, b.carry[:b.ncarry])
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
	}
	p = binary.AppendUvarint(p, flags)
	p = appendBytes(p, f.held)
	if t := f.heldSnap; t != nil {
		p = append(p, byte(t.Stream), byte(t.Kind))
		p = appendString(p, t.Text)
		p = appendBytes(p, t.Bytes)
		p = binary.AppendVarint(p, t.TotalBytes)
	}
	return p
}

func appendMeta(p []byte, m *meta) []byte {
	p = appendString(p, m.terminalID)
	p = appendString(p, m.command)
	p = appendString(p, m.cwd)
	p = appendString(p, m.description)
	p = append(p, byte(m.state), byte(m.outcome))
	p = appendString(p, m.reason)
	p = binary.AppendVarint(p, m.exit)
	p = appendString(p, m.signal)
	var flags uint64
	setBit(&flags, metaTimedOut, m.timedOut)
	setBit(&flags, metaBackground, m.background)
	setBit(&flags, metaAwaiting, m.awaiting)
	p = binary.AppendUvarint(p, flags)
	p = appendString(p, m.approvalReason)
	return p
}

func setBit(flags *uint64, bit uint64, on bool) {
	if on {
		*flags |= bit
	}
}

func appendString(p []byte, s string) []byte {
	p = binary.AppendUvarint(p, uint64(len(s)))
	return append(p, s...)
}

func appendBytes(p []byte, q []byte) []byte {
	p = binary.AppendUvarint(p, uint64(len(q)))
	return append(p, q...)
}

// RestoreCall rebuilds a call from its encoded state (AppendState) and
// its stored streams (every Sync that TakeSync returned up to that state,
// applied in order). The restored call has nothing left to sync: its next
// TakeSync reports only what changes after the restore. Input that is not
// such a pair (corrupt, cut short, from another format version, or
// streams that do not match the state) is an error that names the
// problem, as is a text limit over MaxStateLimit. The streams are not
// kept: the call copies what it holds.
func RestoreCall(state []byte, streams [NumStreams][]byte) (*Call, error) {
	d := decoder{p: state}
	if v := d.byte("format version"); d.err == nil && v != stateVersion {
		return nil, fmt.Errorf("call state: format version %d, want %d", v, stateVersion)
	}
	c := &Call{}
	c.id = d.string("call id")
	limit := d.varint("text limit")
	if d.err == nil && (limit < -MaxStateLimit || limit > MaxStateLimit) {
		d.fail("text limit %d is out of range", limit)
	}
	c.limit = int(limit)
	c.shell = Shell(d.enum("shell", byte(ShellNo)))
	d.meta(&c.cur, "current")
	d.meta(&c.sent, "sent")
	rev := d.uvarint("revision")
	if d.err == nil && rev > math.MaxUint32 {
		d.fail("revision %d is out of range", rev)
	}
	c.revision = uint32(rev)
	flags := d.uvarint("call flags")
	if d.err == nil && flags >= callExitPlaceholder<<1 {
		d.fail("unknown call flags %#x", flags)
	}
	c.cancelled = flags&callCancelled != 0
	c.cancelAsked = flags&callCancelAsked != 0
	c.statusFailed = flags&callStatusFailed != 0
	c.verdictFailed = flags&callVerdictFailed != 0
	c.failed = flags&callFailed != 0
	c.succeeded = flags&callSucceeded != 0
	if flags&callHasExit != 0 {
		code := d.varint("exit code")
		if d.err == nil && (code < math.MinInt32 || code > math.MaxInt32) {
			d.fail("exit code %d is out of range", code)
		}
		src := ExitSource(d.enum("exit source", byte(ExitTerminal)))
		c.exit = &Exit{Code: int32(code), Source: src, Placeholder: flags&callExitPlaceholder != 0}
	} else if flags&callExitPlaceholder != 0 {
		d.fail("a placeholder flag without an exit code")
	}
	c.cancelWhy = d.string("cancel reason")
	c.cancelNotice = d.string("cancel notice")
	c.endReason = d.string("end reason")
	present := d.byte("stream set")
	if d.err == nil && present >= 1<<NumStreams {
		d.fail("stream set %#x names unknown streams", present)
	}
	for s := range NumStreams {
		if d.err != nil {
			break
		}
		if present&(1<<s) != 0 {
			c.streams[s] = d.buffer(Stream(s), c.limit, streams[s])
		} else if len(streams[s]) > 0 {
			d.fail("stream %d: %d stored bytes for a stream the call does not have", s, len(streams[s]))
		}
		d.echo(&c.echoes[s], Stream(s))
	}
	if d.err == nil && len(d.p) > 0 {
		d.fail("%d bytes after the end of the state", len(d.p))
	}
	if d.err != nil {
		return nil, d.err
	}
	return c, nil
}

// decoder reads an encoded call state. The first problem is kept in err;
// after it every read returns zero values.
type decoder struct {
	p   []byte
	err error
}

var errStateShort = errors.New("cut short")

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("call state: "+format, args...)
	}
}

func (d *decoder) byte(what string) byte {
	if d.err != nil {
		return 0
	}
	if len(d.p) == 0 {
		d.fail("%s: %w", what, errStateShort)
		return 0
	}
	v := d.p[0]
	d.p = d.p[1:]
	return v
}

// enum reads a byte that must be at most max.
func (d *decoder) enum(what string, max byte) byte {
	v := d.byte(what)
	if v > max {
		d.fail("%s %d is not a known value", what, v)
		return 0
	}
	return v
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.p)
	if n <= 0 {
		if n == 0 {
			d.fail("%s: %w", what, errStateShort)
		} else {
			d.fail("%s: varint overflows 64 bits", what)
		}
		return 0
	}
	d.p = d.p[n:]
	return v
}

// size reads a length or a count that must be at most max.
func (d *decoder) size(what string, max int64) int64 {
	v := d.uvarint(what)
	if d.err == nil && v > uint64(max) {
		d.fail("%s %d is over %d", what, v, max)
		return 0
	}
	return int64(v)
}

func (d *decoder) varint(what string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.p)
	if n <= 0 {
		if n == 0 {
			d.fail("%s: %w", what, errStateShort)
		} else {
			d.fail("%s: varint overflows 64 bits", what)
		}
		return 0
	}
	d.p = d.p[n:]
	return v
}

// raw reads a length-prefixed run of bytes; it aliases the input.
func (d *decoder) raw(what string) []byte {
	n := d.uvarint(what + " length")
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.p)) {
		d.fail("%s of %d bytes, but only %d remain", what, n, len(d.p))
		return nil
	}
	v := d.p[:n:n]
	d.p = d.p[n:]
	return v
}

func (d *decoder) string(what string) string { return string(d.raw(what)) }

func (d *decoder) meta(m *meta, which string) {
	m.terminalID = d.string(which + " terminal id")
	m.command = d.string(which + " command")
	m.cwd = d.string(which + " cwd")
	m.description = d.string(which + " description")
	m.state = State(d.enum(which+" state", byte(Ended)))
	m.outcome = Outcome(d.enum(which+" outcome", byte(Unknown)))
	m.reason = d.string(which + " outcome reason")
	m.exit = d.varint(which + " exit code")
	if d.err == nil && m.exit != noExit && (m.exit < math.MinInt32 || m.exit > math.MaxInt32) {
		d.fail("%s exit code %d is out of range", which, m.exit)
	}
	m.signal = d.string(which + " signal")
	flags := d.uvarint(which + " flags")
	if d.err == nil && flags >= metaAwaiting<<1 {
		d.fail("unknown %s flags %#x", which, flags)
	}
	m.timedOut = flags&metaTimedOut != 0
	m.background = flags&metaBackground != 0
	m.awaiting = flags&metaAwaiting != 0
	m.approvalReason = d.string(which + " approval reason")
}

// buffer reads a Buffer's state and takes its held text from the end of
// stored, checking each against the other.
func (d *decoder) buffer(s Stream, callLimit int, stored []byte) *Buffer {
	b := NewBuffer(callLimit)
	what := func(field string) string { return fmt.Sprintf("stream %d %s", s, field) }
	flags := d.uvarint(what("flags"))
	if d.err == nil && flags >= bufPendingReplace<<1 {
		d.fail("unknown stream %d flags %#x", s, flags)
	}
	b.producerTrunc = flags&bufProducerTrunc != 0
	b.seen = flags&bufSeen != 0
	b.reported = flags&bufReported != 0
	b.reportedTrunc = flags&bufReportedTrunc != 0
	b.pendingReplace = flags&bufPendingReplace != 0
	b.total = d.size(what("total"), math.MaxInt64/2)
	b.claimed = d.size(what("claimed total"), math.MaxInt64/2)
	b.pendingAppend = d.size(what("pending append"), math.MaxInt64/2)
	carry := d.raw(what("held-back bytes"))
	if d.err == nil && (len(carry) > len(b.carry) || len(carry) > 0 && incompleteTail(carry) != 0) {
		d.fail("stream %d: held-back bytes %q are not the start of one UTF-8 sequence", s, carry)
	}
	b.ncarry = copy(b.carry[:], carry)
	maxCap := int64(b.maxCap())
	heldLen := d.size(what("held length"), int64(b.limit))
	off := d.size(what("offset"), maxCap)
	capacity := d.size(what("capacity"), maxCap)
	storedLen := d.size(what("stored length"), 2*int64(b.limit))
	if d.err != nil {
		return nil
	}
	switch {
	case off+heldLen > capacity:
		d.fail("stream %d: %d held bytes at offset %d overflow a capacity of %d", s, heldLen, off, capacity)
	case b.total < heldLen:
		d.fail("stream %d: total of %d bytes is less than the %d held", s, b.total, heldLen)
	case int64(len(stored)) != storedLen:
		d.fail("stream %d: %d stored bytes, but the state says %d", s, len(stored), storedLen)
	case heldLen > storedLen:
		d.fail("stream %d: %d held bytes, but only %d stored", s, heldLen, storedLen)
	}
	if d.err != nil {
		return nil
	}
	held := stored[storedLen-heldLen:]
	if !utf8.Valid(held) {
		d.fail("stream %d: the held text is not valid UTF-8 (or does not start on a rune)", s)
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
	flags := d.uvarint(fmt.Sprintf("stream %d echo flags", s))
	if d.err == nil && flags >= snapIfSplit<<1 {
		d.fail("unknown stream %d echo flags %#x", s, flags)
	}
	f.heldBytes = flags&echoHeldBytes != 0
	f.heldTrunc = flags&echoHeldTrunc != 0
	if held := d.raw(fmt.Sprintf("stream %d echo text", s)); len(held) > 0 {
		f.held = append([]byte(nil), held...)
	}
	if flags&echoHasSnap == 0 {
		if d.err == nil && flags&^(echoHeldBytes|echoHeldTrunc) != 0 {
			d.fail("stream %d echo flags %#x describe a restatement it does not have", s, flags)
		}
		return
	}
	t := &Text{
		Stream:    Stream(d.byte(fmt.Sprintf("stream %d echo restatement stream", s))),
		Kind:      TextKind(d.byte(fmt.Sprintf("stream %d echo restatement kind", s))),
		Text:      d.string(fmt.Sprintf("stream %d echo restatement text", s)),
		Truncated: flags&snapTruncated != 0,
		Head:      flags&snapHead != 0,
		IfSplit:   flags&snapIfSplit != 0,
	}
	raw := d.raw(fmt.Sprintf("stream %d echo restatement bytes", s))
	if flags&snapHasBytes != 0 {
		t.Bytes = append([]byte{}, raw...)
	} else if d.err == nil && len(raw) > 0 {
		d.fail("stream %d echo restatement has bytes but says it has none", s)
	}
	t.TotalBytes = d.varint(fmt.Sprintf("stream %d echo restatement total", s))
	if d.err == nil && t.Stream != s {
		d.fail("stream %d echo restatement names stream %d", s, t.Stream)
	}
	f.heldSnap = t
}
