// Package wire is the compact binary form acpnorm stores state in (a
// call's accumulation state, a session's records): unsigned and signed
// varints (encoding/binary), flags as one byte, and strings as a varint
// length and the bytes. A Reader checks every length against what is left
// of its input, so corrupt input is an error that names the field, never a
// panic or an allocation larger than the input.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// AppendUvarint appends v as an unsigned varint.
func AppendUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

// AppendVarint appends v as a signed varint.
func AppendVarint(b []byte, v int64) []byte { return binary.AppendVarint(b, v) }

// AppendString appends s as its length and its bytes.
func AppendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// AppendBytes appends q as its length and its bytes.
func AppendBytes(b, q []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(q))), q...)
}

// AppendBool appends v as one byte, 1 or 0.
func AppendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// ErrShort says the input ended before a field did.
var ErrShort = errors.New("cut short")

// Reader reads what the Append functions wrote. The first problem is kept
// in Err, as "<Prefix><field>: <problem>"; after it every read returns a
// zero value, so a decoder reads on and checks Err once.
type Reader struct {
	B      []byte // the input not read yet
	Prefix string // starts every error message, such as "call state: "
	Err    error
}

// Fail records a problem, unless one is recorded already.
func (r *Reader) Fail(format string, args ...any) {
	if r.Err == nil {
		r.Err = fmt.Errorf(r.Prefix+format, args...)
	}
}

// Byte reads one byte.
func (r *Reader) Byte(what string) byte {
	if r.Err != nil {
		return 0
	}
	if len(r.B) == 0 {
		r.Fail("%s: %w", what, ErrShort)
		return 0
	}
	v := r.B[0]
	r.B = r.B[1:]
	return v
}

// Bool reads a flag written by AppendBool.
func (r *Reader) Bool(what string) bool {
	switch v := r.Byte(what); {
	case r.Err != nil:
	case v == 1:
		return true
	case v != 0:
		r.Fail("%s: %d is not a flag", what, v)
	}
	return false
}

// Uvarint reads an unsigned varint.
func (r *Reader) Uvarint(what string) uint64 {
	if r.Err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.B)
	if n <= 0 {
		r.varintFailed(what, n)
		return 0
	}
	r.B = r.B[n:]
	return v
}

// Varint reads a signed varint.
func (r *Reader) Varint(what string) int64 {
	if r.Err != nil {
		return 0
	}
	v, n := binary.Varint(r.B)
	if n <= 0 {
		r.varintFailed(what, n)
		return 0
	}
	r.B = r.B[n:]
	return v
}

func (r *Reader) varintFailed(what string, n int) {
	if n == 0 {
		r.Fail("%s: %w", what, ErrShort)
	} else {
		r.Fail("%s: varint overflows 64 bits", what)
	}
}

// Size reads a length or a count that must be at most max.
func (r *Reader) Size(what string, max int64) int64 {
	v := r.Uvarint(what)
	if r.Err == nil && v > uint64(max) {
		r.Fail("%s %d is over %d", what, v, max)
		return 0
	}
	return int64(v)
}

// Count reads a number of items each at least one byte long: at most what
// is left of the input, so that a corrupt count cannot make the caller
// allocate more than the input holds.
func (r *Reader) Count(what string) int {
	v := r.Uvarint(what)
	if r.Err == nil && v > uint64(len(r.B)) {
		r.Fail("%s %d is over %d", what, v, len(r.B))
		return 0
	}
	return int(v)
}

// Raw reads a length-prefixed run of bytes; it aliases the input.
func (r *Reader) Raw(what string) []byte {
	n := r.Uvarint(what + " length")
	if r.Err != nil {
		return nil
	}
	if n > uint64(len(r.B)) {
		r.Fail("%s of %d bytes, but only %d remain", what, n, len(r.B))
		return nil
	}
	v := r.B[:n:n]
	r.B = r.B[n:]
	return v
}

// String reads a length-prefixed string.
func (r *Reader) String(what string) string { return string(r.Raw(what)) }
