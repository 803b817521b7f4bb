package normalize

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// No two (namespace, session id) pairs share a key, and the default
// namespace's keys are the ids as they were before namespaces.
func TestNamespaceKeys(t *testing.T) {
	pairs := [][2]string{
		{"", "s"}, {"", ""}, {"", "\xff"}, {"", "\xff\x00s"}, {"", "\xff\x01as"}, {"", "\xff\x00"},
		{"a", "s"}, {"a", ""}, {"a", "\xffs"}, {"as", ""}, {"a", "\x01as"}, {"\xff", "s"},
		{"b", "s"}, {string(make([]byte, 200)), "s"}, {string(make([]byte, 201)), ""},
	}
	seen := map[string][2]string{}
	for _, p := range pairs {
		k := newNamespace(p[0]).key(p[1])
		assert.Equal(t, newNamespace(p[0]).prefix, spaceOfKey(k), "the namespace of %q's key", p)
		if other, dup := seen[k]; dup {
			t.Errorf("%q and %q share the key %q", p, other, k)
		}
		seen[k] = p
	}
	for _, id := range []string{"s", "ses_01J", "", "{x}", "a\x00b"} {
		assert.Equal(t, id, newNamespace("").key(id), "the default namespace keeps id %q as its key", id)
	}
}

// Whatever order namespaces release calls in, the tombstones hold at most
// their limit, count the entries they hold, and a namespace that never
// held more than its share (limit over the namespaces) loses none.
func TestTombstonesShareByNamespace(t *testing.T) {
	const limit = 60
	r := rand.New(rand.NewPCG(1, 2))
	tb := newTombstones(limit)
	spaces := []string{"", "a", "b", "c"}
	var quiet []struct{ session, call string } // the modest namespace's entries, never over its share
	for i := range 5000 {
		ns := spaces[r.IntN(3)] // "", a and b release a lot
		call := fmt.Sprint(r.IntN(400))
		if i%40 == 0 && len(quiet) < limit/len(spaces) {
			ns, call = "c", fmt.Sprint("q", len(quiet))
			quiet = append(quiet, struct{ session, call string }{newNamespace(ns).key("S"), call})
		}
		tb.add(newNamespace(ns).key("S"), call, tomb{why: releasedClosed})
		if tb.held() > limit {
			t.Fatalf("after %d adds: %d entries over the limit %d", i+1, tb.held(), limit)
		}
		live := 0
		for _, q := range tb.spaces {
			live += q.live
			if pending := len(q.queue) - q.head; pending < q.live || pending > 2*q.live+64+1 {
				t.Fatalf("namespace %q: %d queued for %d entries", q.space, pending, q.live)
			}
		}
		if live != tb.held() {
			t.Fatalf("after %d adds: the queues count %d entries, the map holds %d", i+1, live, tb.held())
		}
	}
	for _, k := range quiet {
		_, ok := tb.get(k.session, k.call)
		assert.True(t, ok, "the modest namespace kept %v", k)
	}
	assert.Len(t, tb.heap, len(tb.spaces))
}

// A frame read ahead in one namespace is not used by a request of
// another: it is read again, in the request's namespace (the decode memo
// keeps what a read learns apart by namespace).
func TestPreparedOnlyInItsNamespace(t *testing.T) {
	msg := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c","kind":"execute","title":"ls","rawInput":{"command":"ls"}}}}`)
	p := PrepareIn("a", msg, "", "")
	assert.Equal(t, "a", p.space)
	p.frame.AgentName = "read ahead" // what only the frame read ahead says
	for _, tc := range []struct {
		space string
		used  bool
	}{{"a", true}, {"b", false}, {"", false}} {
		r := &reply{req: newRequest(newNamespace(tc.space), nil), ahead: p}
		f, err := r.readWith(p.with, p.name, msg)
		assert.NoError(t, err)
		assert.Equal(t, tc.used, f.AgentName == "read ahead", "namespace %q", tc.space)
		assert.Len(t, f.Observations, 1)
	}
}
