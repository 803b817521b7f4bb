package jsonlit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// memoSmall makes the memo keep every literal, however short, within a
// small budget, for the rest of the test, starting empty.
func memoSmall(tb testing.TB, budget int) {
	tb.Cleanup(SetMemoSizes(0, budget))
	memoTable.mu.Lock()
	memoTable.entries, memoTable.scopes, memoTable.total = nil, nil, 0
	memoTable.mu.Unlock()
}

// callKey is the memo key of call in the scope "".
func callKey(call string) memoKey { return memoKey{call: call} }

// checkMemo reads lit through the memo entry of key and fails unless it
// reads as DecodeLiteral reads it.
func checkMemo(t *testing.T, key memoKey, lit []byte) string {
	t.Helper()
	return checkMemoRead(t, key, lit, memoDecode, DecodeLiteral)
}

// checkMemoRead reads b with memo through the entry of key and fails
// unless it reads as read reads it: the same value, length and verdict.
func checkMemoRead[T any](t *testing.T, key memoKey, b []byte, memo func(memoKey, []byte) (T, int, bool), read func([]byte) (T, int, bool)) T {
	t.Helper()
	got, gotN, gotOK := memo(key, b)
	want, wantN, wantOK := read(b)
	require.Equal(t, wantOK, gotOK, "ok of %q", b)
	require.Equal(t, wantN, gotN, "length of %q", b)
	require.Equal(t, want, got, "value of %q", b)
	return got
}

// memoPieces are what a text grows by: plain runs, escapes, multi-byte
// runes, surrogate pairs, invalid UTF-8 (a sequence that the next piece
// may complete), control and quote escapes.
var memoPieces = []string{
	"plain text ", `\n`, `\r\n`, `\t`, `\"`, `\\`, `\u001b[31m`, "é", "€", "\xe2\x82", "\xac", "\xff",
	`\ud83d`, `\ude00`, `\ud83d\ude00`, `\u00e9`, "x", "0123456789abcdef", `\/`,
}

// TestMemoIsDecodeLiteral: a text that grows, changes, shrinks and turns
// invalid reads through the memo exactly as DecodeLiteral reads it, and a
// text handed out never changes afterwards.
func TestMemoIsDecodeLiteral(t *testing.T) {
	memoSmall(t, 1<<20)
	type handed struct{ got, want string }
	var kept []handed
	memoRuns(rand.New(rand.NewPCG(1, 2)), memoValues{
		name: "call-", open: `"`, pieces: memoPieces, changes: "abc\\\"\x01",
		ends: []string{`"`}, invalid: []string{"\x01", `\q`, `\u12`, ""},
	}, func(key memoKey, lit []byte, valid bool) {
		got := checkMemo(t, key, lit)
		if valid {
			want, _, _ := DecodeLiteral(lit)
			kept = append(kept, handed{got, want})
		}
	})
	for _, h := range kept {
		require.Equal(t, h.want, h.got, "a text handed out changed")
	}
}

// memoValues describes the values memoRuns sends: each is open, a body
// made of pieces, and one of ends (valid) or of invalid.
type memoValues struct {
	name, open    string
	pieces        []string
	changes       string // what a byte already sent may change to
	ends, invalid []string
}

// memoRuns sends values of v through read in 200 runs over 7 keys, 40
// steps each: the body grows, has a byte changed, shrinks (each sent
// with one of v.ends after it), or is sent once with one of v.invalid
// after it.
func memoRuns(rng *rand.Rand, v memoValues, read func(key memoKey, value []byte, valid bool)) {
	for run := range 200 {
		key := callKey(fmt.Sprint(v.name, run%7))
		var body strings.Builder
		for range 40 {
			switch r := rng.IntN(20); {
			case r < 14: // grow
				for range 1 + rng.IntN(4) {
					body.WriteString(v.pieces[rng.IntN(len(v.pieces))])
				}
			case r < 16: // change a byte already sent
				s := []byte(body.String())
				if len(s) > 0 {
					s[rng.IntN(len(s))] = v.changes[rng.IntN(len(v.changes))]
				}
				body.Reset()
				body.Write(s)
			case r < 18: // shrink
				s := body.String()
				body.Reset()
				body.WriteString(s[:rng.IntN(len(s)+1)])
			default: // an invalid tail, once
				read(key, []byte(v.open+body.String()+v.invalid[rng.IntN(len(v.invalid))]), false)
				continue
			}
			read(key, []byte(v.open+body.String()+v.ends[rng.IntN(len(v.ends))]), true)
		}
	}
}

// TestMemoBounded: the memo holds no more than its budget, and an entry
// bigger than half of it is not kept.
func TestMemoBounded(t *testing.T) {
	memoSmall(t, 64<<10)
	line := strings.Repeat("y", 1000) + `\n`
	for i := range 50 {
		lit := []byte(`"` + strings.Repeat(line, 1+i%8) + `"`)
		checkMemo(t, callKey(fmt.Sprint("k", i)), lit)
		memoTable.mu.Lock()
		total := memoTable.total
		memoTable.mu.Unlock()
		require.LessOrEqual(t, total, memoBudget)
	}
	big := []byte(`"` + strings.Repeat(line, 64) + `"`)
	checkMemo(t, callKey("big"), big)
	memoTable.mu.Lock()
	_, kept := memoTable.entries[callKey("big")]
	memoTable.mu.Unlock()
	assert.False(t, kept)
}

// TestMemoConcurrent: goroutines growing the same call's text in
// different ways each read what DecodeLiteral reads (run with -race:
// no byte handed out is written again).
func TestMemoConcurrent(t *testing.T) {
	memoSmall(t, 1<<20)
	memoGoroutines(t, "", func(g, i int) string { return memoPieces[(g*7+i)%len(memoPieces)] }, func(_ int, body string) error {
		lit := []byte(`"` + body + `"`)
		got, _, ok := memoDecode(callKey("shared"), lit)
		if want, _, wantOK := DecodeLiteral(lit); ok != wantOK || got != want {
			return fmt.Errorf("%q read as %q, want %q", lit, got, want)
		}
		return nil
	})
}

// memoGoroutines runs 4 goroutines of 300 steps: at step i, goroutine g
// appends piece(g, i) to its body (which starts as start and is cut to
// half every 50 steps) and calls read with it; an error fails the test
// and ends that goroutine.
func memoGoroutines(t *testing.T, start string, piece func(g, i int) string, read func(g int, body string) error) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			body := start
			for i := range 300 {
				body += piece(g, i)
				if i%50 == 49 {
					body = body[:len(body)/2]
				}
				if err := read(g, body); err != nil {
					t.Errorf("goroutine %d: %v", g, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// FuzzMemoDecode: a literal read after another one through the same
// entry reads as DecodeLiteral reads it, whatever the two are.
func FuzzMemoDecode(f *testing.F) {
	f.Add([]byte("abc"), []byte("def"), 1)
	f.Add([]byte(`a\ud83d`), []byte(`\ude00b`), 0)
	f.Add([]byte("x\xe2\x82"), []byte("\xacy"), 2)
	f.Add([]byte(`a\`), []byte(`nb`), 1)
	f.Fuzz(func(t *testing.T, a, b []byte, cut int) {
		memoSmall(t, 1<<20)
		first := append(append([]byte{'"'}, a...), '"')
		if cut < 0 {
			cut = -cut
		}
		keep := a[:min(cut, len(a))]
		if cut%2 == 1 {
			keep = a
		}
		second := append(append(append([]byte{'"'}, keep...), b...), '"')
		var want string
		if json.Unmarshal(first, &want) == nil {
			checkMemo(t, callKey("f"), first)
		}
		checkMemo(t, callKey("f"), second)
		checkMemo(t, callKey("f"), first)
	})
}

// TestMemoScopesApart: two scopes sending the same session and call ids
// and texts that begin alike each read their own texts as DecodeLiteral
// reads them, and neither reads, extends or replaces the other's entry.
func TestMemoScopesApart(t *testing.T) {
	memoSmall(t, 1<<20)
	head := strings.Repeat("shared prefix ", 10)
	a := memoKeyOf("tenant-a", []byte(`"s"`), []byte(`"c"`), []byte(`"`+head))
	b := memoKeyOf("tenant-b", []byte(`"s"`), []byte(`"c"`), []byte(`"`+head))
	require.NotEqual(t, a, b)
	// b sends a text that begins with a's: it is decoded whole, into an
	// entry of its own, and a's entry is as it was.
	memoScopesApart(t, a, b, func() { checkMemo(t, a, []byte(`"`+head+`of a"`)) }, func() {
		got := checkMemo(t, b, []byte(`"`+head+`of a, and b's own"`))
		assert.Equal(t, head+"of a, and b's own", got)
	})

	// Keys are apart whatever the bytes: a scope ending in a separator is
	// not another scope's session id.
	assert.NotEqual(t,
		memoKeyOf("x\x00\"s\"", []byte(`"c"`), nil, []byte(`"t`)),
		memoKeyOf("x", []byte(`"s"`), []byte(`"c"`), []byte(`"t`)))
}

// TestMemoEvictsTheBiggestScope: when the memo is full, a scope that sends
// many big texts pushes out its own entries, not those of a scope that
// holds little; the budget holds all along.
func TestMemoEvictsTheBiggestScope(t *testing.T) {
	memoSmall(t, 64<<10)
	line := strings.Repeat("z", 1000) + `\n`
	lit := func(n int) []byte { return []byte(`"` + strings.Repeat(line, n) + `"`) }
	quiet := memoKeyOf("quiet", []byte(`"s"`), []byte(`"c"`), lit(1))
	checkMemo(t, quiet, lit(4))
	for i := range 40 {
		k := memoKeyOf("busy", []byte(`"s"`), []byte(fmt.Sprintf(`"c%d"`, i)), lit(1))
		checkMemo(t, k, lit(8))
		memoTable.mu.Lock()
		_, kept := memoTable.entries[quiet]
		total, busy := memoTable.total, memoTable.scopes["busy"]
		memoTable.mu.Unlock()
		require.True(t, kept, "after the busy scope's text %d, the quiet scope's entry is gone", i)
		require.LessOrEqual(t, total, memoBudget)
		require.LessOrEqual(t, busy, memoBudget)
	}
	// The quiet entry is still read from where it was: a grown text
	// decodes only its tail, and reads as DecodeLiteral reads it.
	checkMemo(t, quiet, lit(5))
}

// TestElideKeepsTheScope: the memo entry a big content text makes is
// kept under the scope Elide was given, and a frame of another scope with
// the same ids makes its own.
func TestElideKeepsTheScope(t *testing.T) {
	memoSmall(t, 1<<20)
	t.Cleanup(SetElideSizes(0, 0))
	msg := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c","content":[{"type":"content","content":{"type":"text","text":"` + strings.Repeat("out ", 50) + `"}}]}}}`)
	scopes := func() map[string]int {
		memoTable.mu.Lock()
		defer memoTable.mu.Unlock()
		n := map[string]int{}
		for k := range memoTable.entries {
			n[k.scope]++
		}
		return n
	}
	_, lits := Elide(msg, false, "tenant-a")
	require.Len(t, lits, 1)
	before := scopes()
	_, lits = Elide(msg, false, "tenant-b")
	require.Len(t, lits, 1)
	after := scopes()
	assert.Equal(t, before["tenant-a"], after["tenant-a"])
	assert.Equal(t, 1, after["tenant-a"])
	assert.Equal(t, 1, after["tenant-b"])
	assert.Zero(t, after[""], "no entry outside the scopes given")
}

// checkMemoArray reads the array b through the memo entry of key and
// fails unless it reads as DecodeByteArray reads it; then it overwrites
// the bytes it was handed, which the memo must not be holding.
func checkMemoArray(t *testing.T, key memoKey, b []byte) {
	t.Helper()
	got := checkMemoRead(t, key, b, memoDecodeArray, DecodeByteArray)
	for k := range got {
		got[k] = 0xaa
	}
}

// memoElements are what an array grows by: elements of one to three
// digits, with and without spaces around the commas.
var memoElements = []string{"0,", "7,", "10,", "99,", "100,", "255,", " 42 ,", "1\n,", "\t3,"}

// TestMemoArrayIsDecodeByteArray: an array that grows, changes, shrinks
// and turns invalid reads through the memo exactly as DecodeByteArray
// reads it, whatever the caller does with the bytes it was handed.
func TestMemoArrayIsDecodeByteArray(t *testing.T) {
	memoSmall(t, 1<<20)
	memoRuns(rand.New(rand.NewPCG(3, 4)), memoValues{
		name: "array-", open: "[", pieces: memoElements, changes: "0159, ]-.",
		ends:    []string{"5]", "200]", " 0 ]"},
		invalid: []string{"256]", "01]", "1.5]", "]", "1e2]", "-1]", "1 2]", "1"},
	}, func(key memoKey, arr []byte, _ bool) {
		checkMemoArray(t, key, arr)
	})
}

// FuzzMemoDecodeArray: an array read after another one through the same
// entry reads as DecodeByteArray reads it, whatever the second is: the
// first is the array of a's bytes, the second its first cut bytes and b.
func FuzzMemoDecodeArray(f *testing.F) {
	f.Add([]byte("abc"), []byte("4,5]"), 9)
	f.Add([]byte("hello\n"), []byte("256]"), 12)
	f.Add([]byte{0, 1, 255}, []byte(" 7 ]"), 6)
	f.Add([]byte("xy"), []byte("]"), 100)
	f.Fuzz(func(t *testing.T, a, b []byte, cut int) {
		memoSmall(t, 1<<20)
		first := []byte("[")
		for _, c := range a {
			first = fmt.Appendf(first, "%d,", c)
		}
		first = append(first, "0]"...)
		if cut < 0 {
			cut = -cut
		}
		second := append(append([]byte{}, first[:min(cut, len(first))]...), b...)
		checkMemoArray(t, callKey("f"), first)
		checkMemoArray(t, callKey("f"), second)
		checkMemoArray(t, callKey("f"), first)
	})
}

// TestMemoArrayScopesApart: two scopes sending the same session and call
// ids and arrays that begin alike each read their own, and neither reads
// or extends the other's entry.
func TestMemoArrayScopesApart(t *testing.T) {
	memoSmall(t, 1<<20)
	head := "[" + strings.Repeat("104,105,", 20)
	a := memoKeyOf("tenant-a", []byte(`"s"`), []byte(`"c"`), []byte(head))
	b := memoKeyOf("tenant-b", []byte(`"s"`), []byte(`"c"`), []byte(head))
	memoScopesApart(t, a, b, func() { checkMemoArray(t, a, []byte(head+"1,2]")) }, func() { checkMemoArray(t, b, []byte(head+"1,2,3,4]")) })
}

// memoScopesApart checks that readA, which reads a value through key a,
// makes an entry of a and none of b, and that readB, which reads one
// that begins alike through key b, makes an entry of its own and leaves
// a's as it was.
func memoScopesApart(t *testing.T, a, b memoKey, readA, readB func()) {
	t.Helper()
	readA()
	memoTable.mu.Lock()
	entryA := memoTable.entries[a]
	_, bKept := memoTable.entries[b]
	memoTable.mu.Unlock()
	require.NotNil(t, entryA)
	assert.False(t, bKept, "a's value made no entry of b")
	entryA.mu.Lock()
	rawA, textA := string(entryA.raw), string(entryA.text)
	entryA.mu.Unlock()

	readB()
	memoTable.mu.Lock()
	entryB := memoTable.entries[b]
	memoTable.mu.Unlock()
	require.NotNil(t, entryB)
	assert.NotSame(t, entryA, entryB)
	entryA.mu.Lock()
	assert.Equal(t, rawA, string(entryA.raw), "b's frame changed a's entry")
	assert.Equal(t, textA, string(entryA.text), "b's frame changed a's entry")
	entryA.mu.Unlock()
}

// TestMemoArrayConcurrent: goroutines growing the same call's array in
// different ways each read what DecodeByteArray reads, and may change
// what they were handed (run with -race).
func TestMemoArrayConcurrent(t *testing.T) {
	memoSmall(t, 1<<20)
	memoGoroutines(t, "[", func(g, i int) string { return memoElements[(g*5+i)%len(memoElements)] }, func(g int, body string) error {
		arr := []byte(body + "9]")
		got, _, ok := memoDecodeArray(callKey("shared-array"), arr)
		if want, _, wantOK := DecodeByteArray(arr); ok != wantOK || !bytes.Equal(got, want) {
			return fmt.Errorf("%q read as %v, want %v", arr, got, want)
		}
		for k := range got {
			got[k] = byte(g)
		}
		return nil
	})
}
