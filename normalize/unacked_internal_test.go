package normalize

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The kept requests stay within their bounds, are found by session and
// sequence, and are forgotten when handed on or lost.
func TestUnackedBounds(t *testing.T) {
	var u unacked
	ev := func(text string) []Event {
		return []Event{{ShellExec: &ShellExec{ToolCallID: "c", Output: &Text{Text: text}}}}
	}
	for i := range maxUnackedRequests + 100 {
		u.put("s"+strconv.Itoa(i%7), uint64(i), uint64(i), ev("x"))
	}
	assert.Equal(t, maxUnackedRequests, u.n)
	assert.Nil(t, find(&u, "s0", 0), "the oldest made way")
	last := uint64(maxUnackedRequests + 99)
	e := find(&u, "s"+strconv.Itoa(int(last)%7), last)
	require.NotNil(t, e)
	u.sent(e, last)
	assert.Nil(t, find(&u, "s"+strconv.Itoa(int(last)%7), last))

	// A batch: answered with the first of its frames to come again,
	// forgotten with its last.
	u.put("k", 10, 12, ev("a"))
	e, answered := u.find("k", 11)
	require.NotNil(t, e)
	assert.False(t, answered)
	u.sent(e, 11)
	_, answered = u.find("k", 10)
	assert.True(t, answered)
	u.sent(e, 12)
	assert.Nil(t, find(&u, "k", 10))

	// A request of the session applied anew forgets those that made
	// revisions; one that made none is kept.
	u.put("k", 9, 9, nil)
	u.put("k", 10, 12, ev("a"))
	u.put("k", 13, 13, ev("b"))
	u.put("k2", 13, 13, ev("c"))
	require.NotNil(t, find(&u, "k", 11))
	u.applied("k")
	assert.Nil(t, find(&u, "k", 11))
	assert.Nil(t, find(&u, "k", 13))
	assert.NotNil(t, find(&u, "k", 9), "one without revisions is kept")
	assert.NotNil(t, find(&u, "k2", 13), "another session's are kept")

	// Bytes: big texts push the oldest out; one over the whole bound is
	// not kept at all.
	big := strings.Repeat("y", maxUnackedBytes/4)
	for i := range 8 {
		u.put("b", uint64(100+i), uint64(100+i), ev(big))
		assert.LessOrEqual(t, u.bytes, maxUnackedBytes)
	}
	assert.Nil(t, find(&u, "b", 100))
	assert.NotNil(t, find(&u, "b", 107))
	u.put("huge", 1, 1, ev(strings.Repeat("z", maxUnackedBytes+1)))
	assert.Nil(t, find(&u, "huge", 1))
	assert.LessOrEqual(t, len(u.all), 2*u.n+64+1)
	revisions := 0
	for _, es := range u.byKey {
		for _, e := range es {
			if e.revisions {
				revisions++
			}
		}
	}
	assert.EqualValues(t, revisions, u.held.Load(), "held counts the kept requests with revisions")
}

func find(u *unacked, key string, seq uint64) *unackedReply {
	e, _ := u.find(key, seq)
	return e
}
