package normalize

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The stored form of a session (see persist.go) is a few small binary
// records, written with these helpers: unsigned varints, and strings as a
// varint length and the bytes. Each record starts with a format byte, so
// that a later build can read what an earlier one wrote or refuse it by
// name.

func putUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

func putVarint(b []byte, v int64) []byte { return binary.AppendVarint(b, v) }

func putString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func putBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// decoder reads what the put functions wrote. The first problem sticks:
// every later read returns a zero value, and err says what was wrong.
type decoder struct {
	b    []byte
	what string // the record being read, for the error
	err  error
}

var errCorrupt = errors.New("stored state is corrupt")

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s: %s", errCorrupt, d.what, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a number of items, each at least one byte long, so that a
// corrupt count cannot make the reader allocate more than the record holds.
func (d *decoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail("a count of %d is more than the %d bytes left", n, len(d.b))
		return 0
	}
	return int(n)
}

func (d *decoder) str() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.fail("a string of %d bytes where %d are left", n, len(d.b))
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) byte1() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.fail("ends early")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) boolean() bool {
	switch d.byte1() {
	case 0:
		return false
	case 1:
		return true
	}
	d.fail("bad flag")
	return false
}

// format checks the record's leading format byte.
func (d *decoder) format(want byte) {
	if got := d.byte1(); d.err == nil && got != want {
		d.fail("format %d, but this build reads format %d", got, want)
	}
}
