// Package storetest is the conformance suite of the store contract: every
// Store implementation runs it from its own tests,
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return open(t) })
//	}
//
// and so behaves the same as the others for the engine.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/store"
)

// Run runs every conformance test as a subtest. open is called once per
// subtest and returns an empty store (or one whose sessions cannot collide
// with the names the tests use); the store is closed by Run.
//
// The expiry tests wait, once each, for a TTL of well under a second to
// pass; nothing else depends on time.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"LoadAbsent", testLoadAbsent},
		{"Version", testVersion},
		{"CreateAtBaseZero", testCreate},
		{"StaleBaseConflicts", testConflict},
		{"InvalidChange", testInvalidChange},
		{"Records", testRecords},
		{"HeaderNilUnchanged", testHeader},
		{"Streams", testStreams},
		{"EmptyChangeBumpsVersion", testEmptyChange},
		{"Delete", testDelete},
		{"ChangeBytesCopied", testCopies},
		{"BigValues", testBig},
		{"ManyStreams", testManyStreams},
		{"SessionNames", testNames},
		{"ContextCancelled", testCancelled},
		{"ConcurrentCommitters", testConcurrent},
		{"Expiry", testExpiry},
		{"ExpiryRefreshedByCommit", testExpiryRefreshedByCommit},
		{"Confirm", testConfirm},
		{"LoadParts", testParts},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tc.fn(t, s)
		})
	}
}

const long = time.Hour // a TTL no test outlives

func ctx(t *testing.T) context.Context { return t.Context() }

func load(t *testing.T, s store.Store, session string) *store.Snapshot {
	t.Helper()
	snap, err := s.Load(ctx(t), session)
	if err != nil {
		t.Fatalf("Load(%q): %v", session, err)
	}
	if snap == nil || snap.Records == nil || snap.Streams == nil {
		t.Fatalf("Load(%q) = %+v; want a snapshot with non-nil maps", session, snap)
	}
	return snap
}

func commit(t *testing.T, s store.Store, session string, base uint64, c *store.Change) uint64 {
	t.Helper()
	v, err := s.Commit(ctx(t), session, base, c)
	if err != nil {
		t.Fatalf("Commit(%q, base %d): %v", session, base, err)
	}
	if v <= base {
		t.Fatalf("Commit(%q, base %d) = version %d; want one above the base", session, base, v)
	}
	return v
}

func wantConflict(t *testing.T, err error, what string) {
	t.Helper()
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("%s: err = %v; want ErrConflict", what, err)
	}
}

// want compares a snapshot with what it should hold.
func want(t *testing.T, got *store.Snapshot, version uint64, header []byte, records, streams map[string][]byte) {
	t.Helper()
	if got.Version != version {
		t.Errorf("Version = %d; want %d", got.Version, version)
	}
	if !bytes.Equal(got.Header, header) || (got.Header == nil) != (header == nil) {
		t.Errorf("Header = %q (nil %v); want %q (nil %v)", got.Header, got.Header == nil, header, header == nil)
	}
	eq := func(what string, got, want map[string][]byte) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s: %d entries %q; want %d %q", what, len(got), slices.Sorted(maps.Keys(got)), len(want), slices.Sorted(maps.Keys(want)))
		}
		for k, w := range want {
			g, ok := got[k]
			if !ok {
				t.Errorf("%s[%q] missing", what, k)
			} else if !bytes.Equal(g, w) {
				t.Errorf("%s[%q] = %s; want %s", what, k, short(g), short(w))
			}
		}
	}
	eq("Records", got.Records, records)
	eq("Streams", got.Streams, streams)
}

func short(b []byte) string {
	if len(b) > 64 {
		return fmt.Sprintf("%q... (%d bytes)", b[:64], len(b))
	}
	return fmt.Sprintf("%q", b)
}

func rec(kv ...string) map[string][]byte {
	m := map[string][]byte{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = []byte(kv[i+1])
	}
	return m
}

func testLoadAbsent(t *testing.T, s store.Store) {
	want(t, load(t, s, "absent"), 0, nil, nil, nil)
}

func testVersion(t *testing.T, s store.Store) {
	version := func() uint64 {
		t.Helper()
		v, err := s.Version(ctx(t), "a")
		if err != nil {
			t.Fatalf("Version: %v", err)
		}
		return v
	}
	if v := version(); v != 0 {
		t.Fatalf("version of an absent session: %d", v)
	}
	v1 := commit(t, s, "a", 0, &store.Change{Header: []byte("h"), TTL: long})
	v := commit(t, s, "a", v1, &store.Change{Records: rec("r", "1"), TTL: long})
	if got := version(); got != v || v <= v1 {
		t.Fatalf("version after two commits: %d, Commit said %d", got, v)
	}
	if err := s.Delete(ctx(t), "a", v); err != nil {
		t.Fatal(err)
	}
	if v := version(); v != 0 {
		t.Fatalf("version after Delete: %d", v)
	}
}

// A Confirmer confirms a session it acknowledged the commits of (the
// suite runs with every replica a store waits for in sync), and changes
// nothing of it.
func testConfirm(t *testing.T, s store.Store) {
	c, ok := s.(store.Confirmer)
	if !ok {
		t.Skip("not a store.Confirmer")
	}
	v := commit(t, s, "a", 0, &store.Change{Header: []byte("h"), Records: rec("r", "1"), TTL: long})
	if err := c.Confirm(ctx(t), "a"); err != nil {
		t.Fatalf("Confirm after an acknowledged commit: %v", err)
	}
	want(t, load(t, s, "a"), v, []byte("h"), rec("r", "1"), nil)
	if v2 := commit(t, s, "a", v, &store.Change{TTL: long}); v2 <= v {
		t.Fatalf("commit after Confirm: version %d after %d", v2, v)
	}
}

func testCreate(t *testing.T, s store.Store) {
	v := commit(t, s, "a", 0, &store.Change{
		Header:  []byte("hdr"),
		Records: rec("c1", "one", "c2", ""),
		Streams: []store.StreamOp{{Name: "c1/0", Data: []byte("out"), Append: true}, {Name: "c1/1", Data: []byte("err")}},
		TTL:     long,
	})
	want(t, load(t, s, "a"), v, []byte("hdr"), rec("c1", "one", "c2", ""), rec("c1/0", "out", "c1/1", "err"))
	// Base 0 again: the session exists now.
	_, err := s.Commit(ctx(t), "a", 0, &store.Change{Header: []byte("other"), TTL: long})
	wantConflict(t, err, "second create")
	want(t, load(t, s, "a"), v, []byte("hdr"), rec("c1", "one", "c2", ""), rec("c1/0", "out", "c1/1", "err"))
	// Another session is untouched.
	want(t, load(t, s, "b"), 0, nil, nil, nil)
}

func testConflict(t *testing.T, s store.Store) {
	v1 := commit(t, s, "a", 0, &store.Change{Header: []byte("h1"), Records: rec("r", "1"), Streams: []store.StreamOp{{Name: "s", Data: []byte("x"), Append: true}}, TTL: long})
	v := commit(t, s, "a", v1, &store.Change{Records: rec("r", "2"), TTL: long})
	bad := &store.Change{
		Header:  []byte("h-bad"),
		Records: map[string][]byte{"r": []byte("bad"), "new": []byte("bad")},
		Streams: []store.StreamOp{{Name: "s", Data: []byte("bad"), Append: true}, {Name: "t", Data: []byte("bad")}},
		TTL:     long,
	}
	for _, base := range []uint64{0, v1, v - 1, v + 1, v + 100} {
		if base == v {
			continue
		}
		_, err := s.Commit(ctx(t), "a", base, bad)
		wantConflict(t, err, fmt.Sprintf("commit at stale base %d (current %d)", base, v))
		want(t, load(t, s, "a"), v, []byte("h1"), rec("r", "2"), rec("s", "x"))
	}
	// An absent session is at version 0 only.
	_, err := s.Commit(ctx(t), "absent", 1, bad)
	wantConflict(t, err, "commit at base 1 to an absent session")
	want(t, load(t, s, "absent"), 0, nil, nil, nil)
}

func testInvalidChange(t *testing.T, s store.Store) {
	for _, c := range []*store.Change{nil, {Header: []byte("h")}, {Header: []byte("h"), TTL: -time.Second}} {
		_, err := s.Commit(ctx(t), "a", 0, c)
		if err == nil || errors.Is(err, store.ErrConflict) || !errors.Is(err, store.ErrNotApplied) {
			t.Errorf("Commit(%+v) err = %v; want an error that is not ErrConflict and wraps ErrNotApplied", c, err)
		}
	}
	// A context already ended: refused before anything is sent.
	done, cancel := context.WithCancel(ctx(t))
	cancel()
	if _, err := s.Commit(done, "a", 0, &store.Change{Header: []byte("h"), TTL: long}); !errors.Is(err, store.ErrNotApplied) {
		t.Errorf("Commit with an ended context: err = %v; want one wrapping ErrNotApplied", err)
	}
	want(t, load(t, s, "a"), 0, nil, nil, nil)
}

func testRecords(t *testing.T, s store.Store) {
	odd := "r:\x00{x}/é"
	v := commit(t, s, "a", 0, &store.Change{Records: rec("a", "1", "b", "2", odd, "3"), TTL: long})
	v = commit(t, s, "a", v, &store.Change{Records: map[string][]byte{"a": nil, "b": []byte("22"), "c": {}, "never": nil}, TTL: long})
	want(t, load(t, s, "a"), v, nil, rec("b", "22", "c", "", odd, "3"), nil)
	v = commit(t, s, "a", v, &store.Change{Records: map[string][]byte{odd: nil, "b": nil, "c": nil}, TTL: long})
	want(t, load(t, s, "a"), v, nil, nil, nil)
}

// testParts holds a PartLoader to loading a session without the bytes
// of some records, and to reading one record alone.
func testParts(t *testing.T, s store.Store) {
	p, ok := s.(store.PartLoader)
	if !ok {
		t.Skip("not a store.PartLoader")
	}
	snap, err := p.LoadWithout(ctx(t), "a", "x:")
	if err != nil || snap.Version != 0 || len(snap.Records) != 0 || len(snap.Sizes) != 0 {
		t.Fatalf("LoadWithout of an absent session = %+v, %v; want version 0, nothing", snap, err)
	}
	if r, err := p.LoadRecord(ctx(t), "a", "x:1"); r != nil || err != nil {
		t.Fatalf("LoadRecord of an absent session = %q, %v; want nil, nil", r, err)
	}
	big := strings.Repeat("b", 1<<20)
	v := commit(t, s, "a", 0, &store.Change{Header: []byte("h"), Records: rec("x:1", big, "x:2", "", "y", "1", "xx", "2"),
		Streams: []store.StreamOp{{Name: "s", Data: []byte("text")}}, TTL: long})
	snap, err = p.LoadWithout(ctx(t), "a", "x:")
	if err != nil {
		t.Fatalf("LoadWithout: %v", err)
	}
	want(t, snap, v, []byte("h"), rec("y", "1", "xx", "2"), rec("s", "text"))
	if !maps.Equal(snap.Sizes, map[string]int{"x:1": len(big), "x:2": 0}) {
		t.Errorf("Sizes = %v; want x:1 %d, x:2 0", snap.Sizes, len(big))
	}
	for name, w := range map[string]string{"x:1": big, "x:2": "", "y": "1"} {
		r, err := p.LoadRecord(ctx(t), "a", name)
		if err != nil || r == nil || string(r) != w {
			t.Errorf("LoadRecord(%q) = %s, %v; want %s", name, short(r), err, short([]byte(w)))
		}
	}
	if r, err := p.LoadRecord(ctx(t), "a", "x:3"); r != nil || err != nil {
		t.Errorf("LoadRecord of an absent record = %q, %v; want nil, nil", r, err)
	}
	// Load still has them all.
	want(t, load(t, s, "a"), v, []byte("h"), rec("x:1", big, "x:2", "", "y", "1", "xx", "2"), rec("s", "text"))
}

func testHeader(t *testing.T, s store.Store) {
	v := commit(t, s, "a", 0, &store.Change{Records: rec("r", "1"), TTL: long})
	want(t, load(t, s, "a"), v, nil, rec("r", "1"), nil)
	v = commit(t, s, "a", v, &store.Change{Header: []byte("h1"), TTL: long})
	v = commit(t, s, "a", v, &store.Change{Records: rec("r", "2"), TTL: long})
	want(t, load(t, s, "a"), v, []byte("h1"), rec("r", "2"), nil)
	v = commit(t, s, "a", v, &store.Change{Header: []byte{}, TTL: long})
	want(t, load(t, s, "a"), v, []byte{}, rec("r", "2"), nil)
	v = commit(t, s, "a", v, &store.Change{Header: []byte("h\x00\xff"), TTL: long})
	want(t, load(t, s, "a"), v, []byte("h\x00\xff"), rec("r", "2"), nil)
}

func testStreams(t *testing.T, s store.Store) {
	app := func(name, data string) store.StreamOp {
		return store.StreamOp{Name: name, Data: []byte(data), Append: true}
	}
	set := func(name, data string) store.StreamOp { return store.StreamOp{Name: name, Data: []byte(data)} }
	del := func(name string) store.StreamOp { return store.StreamOp{Name: name, Delete: true} }
	odd := "c:\x00{1}/0é"

	v := commit(t, s, "a", 0, &store.Change{Streams: []store.StreamOp{app("s", "ab"), app("s", "cd"), set("r", "xy"), app(odd, "1"), app("e", "")}, TTL: long})
	want(t, load(t, s, "a"), v, nil, nil, rec("s", "abcd", "r", "xy", odd, "1", "e", ""))

	// Append grows, replace replaces, delete removes; ops apply in order.
	v = commit(t, s, "a", v, &store.Change{Streams: []store.StreamOp{app("s", "ef"), set("r", "z"), app("r", "+"), app(odd, "2"), set("e", "")}, TTL: long})
	want(t, load(t, s, "a"), v, nil, nil, rec("s", "abcdef", "r", "z+", odd, "12", "e", ""))

	v = commit(t, s, "a", v, &store.Change{Streams: []store.StreamOp{del("s"), {Name: "r", Data: []byte("ignored"), Append: true, Delete: true}, del("never")}, TTL: long})
	want(t, load(t, s, "a"), v, nil, nil, rec(odd, "12", "e", ""))

	// A deleted stream starts again from nothing; delete then append in one commit.
	v = commit(t, s, "a", v, &store.Change{Streams: []store.StreamOp{app("s", "new"), del(odd), app(odd, "fresh"), del("e")}, TTL: long})
	want(t, load(t, s, "a"), v, nil, nil, rec("s", "new", odd, "fresh"))

	// A stream may be named "": made, grown, deleted, made again.
	v = commit(t, s, "a", v, &store.Change{Streams: []store.StreamOp{app("", "1"), app("", "2")}, TTL: long})
	want(t, load(t, s, "a"), v, nil, nil, rec("s", "new", odd, "fresh", "", "12"))
	v = commit(t, s, "a", v, &store.Change{Streams: []store.StreamOp{del(""), app("s", "+")}, TTL: long})
	want(t, load(t, s, "a"), v, nil, nil, rec("s", "new+", odd, "fresh"))
	v = commit(t, s, "a", v, &store.Change{Streams: []store.StreamOp{set("", "again"), del("s"), app("s", "new")}, TTL: long})
	want(t, load(t, s, "a"), v, nil, nil, rec("s", "new", odd, "fresh", "", "again"))
	v = commit(t, s, "a", v, &store.Change{Streams: []store.StreamOp{del("")}, TTL: long})

	// Binary data.
	bin := []byte{0, 1, 2, 0xff, 0xfe, '\n', 0}
	v = commit(t, s, "a", v, &store.Change{Streams: []store.StreamOp{{Name: "s", Data: bin}, {Name: "s", Data: bin, Append: true}}, TTL: long})
	want(t, load(t, s, "a"), v, nil, nil, map[string][]byte{"s": append(slices.Clone(bin), bin...), odd: []byte("fresh")})
}

func testEmptyChange(t *testing.T, s store.Store) {
	v := commit(t, s, "a", 0, &store.Change{TTL: long})
	want(t, load(t, s, "a"), v, nil, nil, nil)
	v = commit(t, s, "a", v, &store.Change{TTL: long})
	want(t, load(t, s, "a"), v, nil, nil, nil)
}

func testDelete(t *testing.T, s store.Store) {
	// Deleting an absent session at base 0 is a no-op; at another base a conflict.
	if err := s.Delete(ctx(t), "a", 0); err != nil {
		t.Fatalf("Delete of an absent session at base 0: %v", err)
	}
	wantConflict(t, s.Delete(ctx(t), "a", 1), "Delete of an absent session at base 1")

	c := &store.Change{Header: []byte("h"), Records: rec("r", "1"), Streams: []store.StreamOp{{Name: "s", Data: []byte("out"), Append: true}, {Name: "t", Data: []byte("x")}}, TTL: long}
	v1 := commit(t, s, "a", 0, c)
	v := commit(t, s, "a", v1, &store.Change{Records: rec("q", "2"), TTL: long})
	vb := commit(t, s, "b", 0, c)

	for _, base := range []uint64{0, v1, v + 1} {
		wantConflict(t, s.Delete(ctx(t), "a", base), fmt.Sprintf("Delete at stale base %d", base))
		want(t, load(t, s, "a"), v, []byte("h"), rec("r", "1", "q", "2"), rec("s", "out", "t", "x"))
	}
	if err := s.Delete(ctx(t), "a", v); err != nil {
		t.Fatalf("Delete at the current base: %v", err)
	}
	want(t, load(t, s, "a"), 0, nil, nil, nil)
	wantConflict(t, s.Delete(ctx(t), "a", v), "second Delete")
	// Nothing of the old session comes back when it is created again.
	va := commit(t, s, "a", 0, &store.Change{Streams: []store.StreamOp{{Name: "s", Data: []byte("+"), Append: true}}, TTL: long})
	want(t, load(t, s, "a"), va, nil, nil, rec("s", "+"))
	// The other session is untouched.
	want(t, load(t, s, "b"), vb, []byte("h"), rec("r", "1"), rec("s", "out", "t", "x"))
}

func testCopies(t *testing.T, s store.Store) {
	h, r, d := []byte("head"), []byte("rec"), []byte("data")
	v := commit(t, s, "a", 0, &store.Change{Header: h, Records: map[string][]byte{"r": r}, Streams: []store.StreamOp{{Name: "s", Data: d, Append: true}, {Name: "t", Data: d}}, TTL: long})
	copy(h, "XXXX")
	copy(r, "XXX")
	copy(d, "XXXX")
	snap := load(t, s, "a")
	want(t, snap, v, []byte("head"), rec("r", "rec"), rec("s", "data", "t", "data"))
	// Changing what Load returned changes nothing stored.
	copy(snap.Header, "YYYY")
	copy(snap.Records["r"], "YYY")
	copy(snap.Streams["s"], "YYYY")
	snap.Records["new"] = []byte("x")
	want(t, load(t, s, "a"), v, []byte("head"), rec("r", "rec"), rec("s", "data", "t", "data"))
}

func testBig(t *testing.T, s store.Store) {
	const n = 256 << 10
	a := bytes.Repeat([]byte("0123456789abcdef"), n/16)
	b := bytes.Repeat([]byte{0, 0xff, 'x', '\n'}, n/4)
	v := commit(t, s, "a", 0, &store.Change{Header: a[:4096], Records: map[string][]byte{"r": b}, Streams: []store.StreamOp{{Name: "s", Data: a}, {Name: "t", Data: b, Append: true}}, TTL: long})
	v = commit(t, s, "a", v, &store.Change{Streams: []store.StreamOp{{Name: "s", Data: b, Append: true}, {Name: "t", Data: a}}, TTL: long})
	want(t, load(t, s, "a"), v, a[:4096], map[string][]byte{"r": b}, map[string][]byte{"s": append(slices.Clone(a), b...), "t": a})
}

// testManyStreams: one commit may touch thousands of streams (the engine
// deletes every released call's streams at once, a session may hold
// thousands of calls), and one session may hold thousands.
func testManyStreams(t *testing.T, s store.Store) {
	const n = 9000
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%d:c%d", i%3, i)
	}
	// ops is op on every stream.
	ops := func(op store.StreamOp) []store.StreamOp {
		out := make([]store.StreamOp, n)
		for i, name := range names {
			out[i] = op
			out[i].Name = name
		}
		return out
	}
	v := commit(t, s, "a", 0, &store.Change{Streams: ops(store.StreamOp{Data: []byte("x"), Append: true}), TTL: long})
	v = commit(t, s, "a", v, &store.Change{Streams: ops(store.StreamOp{Data: []byte("y"), Append: true}), TTL: long})
	all := map[string][]byte{}
	for _, name := range names {
		all[name] = []byte("xy")
	}
	want(t, load(t, s, "a"), v, nil, nil, all)
	v = commit(t, s, "a", v, &store.Change{Streams: ops(store.StreamOp{Delete: true}), TTL: long})
	want(t, load(t, s, "a"), v, nil, nil, nil)
}

func testNames(t *testing.T, s store.Store) {
	names := []string{
		"", "a", "{a}", "}{", "{", "}", "a}:s:b", "a:k", "a:s:b", ":", "\x00", "a\x00b",
		"日本語-セッション", "\xff\xfe", strings.Repeat("x{y}", 100), "sess/1?x=y&z", "acpnorm:{a}",
	}
	vs := map[string]uint64{}
	for i, n := range names {
		vs[n] = commit(t, s, n, 0, &store.Change{
			Header:  []byte(fmt.Sprint("h", i)),
			Records: map[string][]byte{n: []byte(fmt.Sprint("r", i))},
			Streams: []store.StreamOp{{Name: n, Data: []byte(fmt.Sprint("s", i)), Append: true}, {Name: "s:b", Data: []byte(fmt.Sprint("t", i))}},
			TTL:     long,
		})
	}
	for i, n := range names {
		got := load(t, s, n)
		want(t, got, vs[n], []byte(fmt.Sprint("h", i)), map[string][]byte{n: []byte(fmt.Sprint("r", i))},
			map[string][]byte{n: []byte(fmt.Sprint("s", i)), "s:b": []byte(fmt.Sprint("t", i))})
	}
	// Deleting one leaves the others.
	if err := s.Delete(ctx(t), "a", vs["a"]); err != nil {
		t.Fatal(err)
	}
	for i, n := range names {
		got := load(t, s, n)
		if n == "a" {
			want(t, got, 0, nil, nil, nil)
			continue
		}
		if got.Version != vs[n] || string(got.Header) != fmt.Sprint("h", i) || len(got.Streams) != 2 {
			t.Errorf("session %q after deleting %q: %+v", n, "a", got)
		}
	}
}

func testCancelled(t *testing.T, s store.Store) {
	v := commit(t, s, "a", 0, &store.Change{Header: []byte("h"), TTL: long})
	c, cancel := context.WithCancel(ctx(t))
	cancel()
	if _, err := s.Load(c, "a"); !errors.Is(err, context.Canceled) {
		t.Errorf("Load with a cancelled context: err = %v; want context.Canceled", err)
	}
	if _, err := s.Commit(c, "a", v, &store.Change{Header: []byte("x"), TTL: long}); !errors.Is(err, context.Canceled) {
		t.Errorf("Commit with a cancelled context: err = %v; want context.Canceled", err)
	}
	if err := s.Delete(c, "a", v); !errors.Is(err, context.Canceled) {
		t.Errorf("Delete with a cancelled context: err = %v; want context.Canceled", err)
	}
	want(t, load(t, s, "a"), v, []byte("h"), nil, nil)
}

// testConcurrent races writers on one session. Each writer loads, builds a
// commit on what it read and retries on conflict until it has won wins
// commits. Exactly one commit may win each version, and the stored state
// must be what applying the winning commits in version order gives.
func testConcurrent(t *testing.T, s store.Store) {
	const writers, wins = 8, 12
	type won struct {
		writer, n int
		sawLen    int    // length of stream "log" the commit was built on
		base      uint64 // the version it was built on
	}
	var (
		mu     sync.Mutex
		byVer  = map[uint64]won{}
		errs   []error
		wg     sync.WaitGroup
		losses int
	)
	for w := range writers {
		wg.Go(func() {
			for n := 0; n < wins; {
				snap, err := s.Load(ctx(t), "race")
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				entry := fmt.Sprintf("w%d.%d;", w, n)
				c := &store.Change{
					Header:  []byte(entry),
					Records: map[string][]byte{fmt.Sprint("w", w): []byte(fmt.Sprint(n)), "last": []byte(entry)},
					Streams: []store.StreamOp{{Name: "log", Data: []byte(entry), Append: true}, {Name: "cur", Data: []byte(entry)}},
					TTL:     long,
				}
				v, err := s.Commit(ctx(t), "race", snap.Version, c)
				mu.Lock()
				switch {
				case errors.Is(err, store.ErrConflict):
					losses++
				case err != nil:
					errs = append(errs, err)
				case v <= snap.Version:
					errs = append(errs, fmt.Errorf("writer %d: commit at base %d returned version %d", w, snap.Version, v))
				default:
					if prev, dup := byVer[v]; dup {
						errs = append(errs, fmt.Errorf("version %d won twice: by writer %d and writer %d", v, prev.writer, w))
					}
					byVer[v] = won{writer: w, n: n, sawLen: len(snap.Streams["log"]), base: snap.Version}
					n++
				}
				stop := len(errs) > 0
				mu.Unlock()
				if stop {
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	if len(byVer) != writers*wins {
		t.Fatalf("%d commits won; want %d", len(byVer), writers*wins)
	}
	t.Logf("%d commits won, %d lost to a conflict", len(byVer), losses)
	var log strings.Builder
	records := map[string][]byte{}
	var last string
	prev := uint64(0)
	for _, v := range slices.Sorted(maps.Keys(byVer)) {
		x := byVer[v]
		if x.base != prev {
			t.Fatalf("version %d was built on version %d; the winning commit before it made version %d", v, x.base, prev)
		}
		prev = v
		if x.sawLen != log.Len() {
			t.Errorf("version %d was built on a log of %d bytes; the winning commits before it wrote %d", v, x.sawLen, log.Len())
		}
		last = fmt.Sprintf("w%d.%d;", x.writer, x.n)
		log.WriteString(last)
		records[fmt.Sprint("w", x.writer)] = []byte(fmt.Sprint(x.n))
	}
	records["last"] = []byte(last)
	want(t, load(t, s, "race"), prev, []byte(last), records, map[string][]byte{"log": []byte(log.String()), "cur": []byte(last)})
}

// waitGone sleeps for ttl, then polls until the session has expired, for at most a bounded time.
func waitGone(t *testing.T, s store.Store, session string, ttl time.Duration) {
	t.Helper()
	time.Sleep(ttl)
	deadline := time.Now().Add(20 * time.Second)
	for {
		snap := load(t, s, session)
		if snap.Version == 0 {
			want(t, snap, 0, nil, nil, nil)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %q still at version %d 20 s after its TTL of %v", session, snap.Version, ttl)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func testExpiry(t *testing.T, s store.Store) {
	const ttl = 300 * time.Millisecond
	c := &store.Change{Header: []byte("h"), Records: rec("r", "1"), Streams: []store.StreamOp{{Name: "s", Data: []byte("x"), Append: true}}, TTL: ttl}
	vs := commit(t, s, "short", 0, c)
	vk := commit(t, s, "kept", 0, &store.Change{Header: []byte("k"), TTL: long})
	waitGone(t, s, "short", ttl)
	// An expired session is created again from nothing, with base 0;
	// a commit based on its old version conflicts.
	_, err := s.Commit(ctx(t), "short", vs, &store.Change{Header: []byte("late"), TTL: long})
	wantConflict(t, err, "commit to an expired session at its old version")
	v := commit(t, s, "short", 0, &store.Change{Streams: []store.StreamOp{{Name: "s", Data: []byte("y"), Append: true}}, TTL: long})
	want(t, load(t, s, "short"), v, nil, nil, rec("s", "y"))
	want(t, load(t, s, "kept"), vk, []byte("k"), nil, nil)
}

// testExpiryRefreshedByCommit: a commit sets the expiry of every part of
// the session, including the parts an earlier commit with a longer TTL
// wrote. (That a commit also extends a shorter expiry is checked by each
// implementation's own tests, with a clock or the server's TTLs, so that
// no test here races the wall clock.)
func testExpiryRefreshedByCommit(t *testing.T, s store.Store) {
	const ttl = 300 * time.Millisecond
	v := commit(t, s, "a", 0, &store.Change{Header: []byte("h"), Records: rec("r", "1"), Streams: []store.StreamOp{{Name: "s", Data: []byte("x"), Append: true}, {Name: "t", Data: []byte("y")}}, TTL: long})
	commit(t, s, "a", v, &store.Change{Records: rec("q", "2"), TTL: ttl})
	waitGone(t, s, "a", ttl)
	va := commit(t, s, "a", 0, &store.Change{Streams: []store.StreamOp{{Name: "s", Data: []byte("+"), Append: true}}, TTL: long})
	want(t, load(t, s, "a"), va, nil, nil, rec("s", "+"))
}
