package wire

import (
	"errors"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	b := AppendString(nil, "héllo")
	b = AppendBytes(b, []byte{0, 1})
	b = AppendBool(b, true)
	b = AppendUvarint(b, 1<<40)
	b = AppendVarint(b, -7)
	r := Reader{B: b, Prefix: "x: "}
	if s, q, f, u, v := r.String("s"), r.Raw("q"), r.Bool("f"), r.Uvarint("u"), r.Varint("v"); r.Err != nil || s != "héllo" || string(q) != "\x00\x01" || !f || u != 1<<40 || v != -7 || len(r.B) != 0 {
		t.Fatalf("read back %q %q %v %d %d, left %d, err %v", s, q, f, u, v, len(r.B), r.Err)
	}
}

// Corrupt input is an error naming the field, and the first one sticks.
func TestReaderErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		read func(r *Reader)
		want string
	}{
		{"short", nil, func(r *Reader) { r.Byte("kind") }, "rec: kind: cut short"},
		{"overflow", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1}, func(r *Reader) { r.Uvarint("n") }, "rec: n: varint overflows 64 bits"},
		{"flag", []byte{2}, func(r *Reader) { r.Bool("on") }, "rec: on: 2 is not a flag"},
		{"size", []byte{9}, func(r *Reader) { r.Size("calls", 8) }, "rec: calls 9 is over 8"},
		{"count over the input", []byte{5, 1}, func(r *Reader) { r.Count("items") }, "rec: items 5 is over 1"},
		{"string over the input", []byte{4, 'a'}, func(r *Reader) { r.String("id") }, "rec: id of 4 bytes, but only 1 remain"},
		{"first error sticks", []byte{2}, func(r *Reader) { r.Bool("a"); r.Byte("b") }, "rec: a: 2 is not a flag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Reader{B: tc.in, Prefix: "rec: "}
			tc.read(&r)
			if r.Err == nil || r.Err.Error() != tc.want {
				t.Fatalf("error %v, want %q", r.Err, tc.want)
			}
			if strings.Contains(tc.want, "cut short") && !errors.Is(r.Err, ErrShort) {
				t.Fatalf("%v is not ErrShort", r.Err)
			}
		})
	}
}
