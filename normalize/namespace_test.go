package normalize_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/acpnorm/acpnorm/normalize"
	"github.com/acpnorm/acpnorm/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ACP frames of a generic agent, for the namespace tests.
func nsUpdate(u string) []byte {
	return []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":` + u + `}}`)
}

func nsOpen(call, cmd string) []byte {
	return nsUpdate(`{"sessionUpdate":"tool_call","toolCallId":"` + call + `","title":"` + cmd + `","kind":"execute","status":"in_progress","rawInput":{"command":"` + cmd + `"}}`)
}

func nsTerminal(call, term string) []byte {
	return nsUpdate(`{"sessionUpdate":"tool_call_update","toolCallId":"` + call + `","content":[{"type":"terminal","terminalId":"` + term + `"}]}`)
}

func nsDelta(call, data string) []byte {
	return nsUpdate(`{"sessionUpdate":"tool_call_update","toolCallId":"` + call + `","_meta":{"terminal_output":{"terminal_id":"` + call + `","data":"` + data + `"}}}`)
}

func nsTermOutput(term, data string) []byte {
	return nsUpdate(`{"sessionUpdate":"terminal_output_chunk","terminalId":"` + term + `","data":"` + base64.StdEncoding.EncodeToString([]byte(data)) + `"}`)
}

func nsAsk(id int, call, cmd string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"session/request_permission","params":{"sessionId":"x","toolCall":{"toolCallId":"` + call + `","title":"` + cmd + `","kind":"execute","rawInput":{"command":"` + cmd + `"}},"options":[{"optionId":"allow","kind":"allow_once","name":"Allow"},{"optionId":"reject","kind":"reject_once","name":"Reject"}]}}`)
}

func nsAnswer(id int, option string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + itoa(id) + `,"result":{"outcome":{"outcome":"selected","optionId":"` + option + `"}}}`)
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// feedAll feeds frames to n under session id and returns every revision
// and FrameError, in order.
func feedAll(t *testing.T, n *normalize.Normalizer, id string, frames ...[]byte) ([]*normalize.ShellExec, []*normalize.FrameError) {
	t.Helper()
	var execs []*normalize.ShellExec
	var errs []*normalize.FrameError
	for _, f := range frames {
		_, err := n.Feed(id, f, normalize.WithEmit(func(ev normalize.Event) error {
			if ev.ShellExec != nil {
				execs = append(execs, ev.ShellExec)
			} else {
				errs = append(errs, ev.Error)
			}
			return nil
		}))
		require.NoError(t, err)
	}
	return execs, errs
}

// The scenario, in the engine: A runs a command whose output is a
// secret; B, in another namespace, writes to the same session and call id
// and reads back only what it wrote itself.
func TestNamespacesKeepSessionsApart(t *testing.T) {
	st := store.NewMemory()
	for name, mk := range map[string]func() *normalize.Normalizer{
		"memory": func() *normalize.Normalizer { return normalize.New() },
		"store":  func() *normalize.Normalizer { return normalize.New(normalize.WithStore(st)) },
	} {
		t.Run(name, func(t *testing.T) {
			n := mk()
			a, b := n.Namespace("team-a"), n.Namespace("team-b")
			execs, errs := feedAll(t, a, "S1", nsOpen("c1", "cat secrets.env"), nsDelta("c1", "AWS_SECRET=hunter2\\n"))
			require.Empty(t, errs)
			require.Len(t, execs, 2)

			execs, errs = feedAll(t, b, "S1", nsDelta("c1", "."))
			assert.Empty(t, errs)
			for _, x := range execs {
				assert.Equal(t, uint32(1), x.Revision, "B's write opens B's own call")
				assert.NotContains(t, x.Output.Text, "hunter2")
				assert.Empty(t, x.Command, "B learns nothing of A's command")
			}
			// The default namespace is another one again.
			execs, _ = feedAll(t, n, "S1", nsDelta("c1", "!"))
			for _, x := range execs {
				assert.NotContains(t, x.Output.Text, "hunter2")
			}

			// A's call went on untouched: its next revision is 3 and its
			// output does not hold B's dot.
			execs, errs = feedAll(t, a, "S1", nsDelta("c1", "more"))
			require.Empty(t, errs)
			require.Len(t, execs, 1)
			assert.Equal(t, uint32(3), execs[0].Revision)
			assert.Equal(t, "more", execs[0].Output.Text)
			assert.Equal(t, normalize.Append, execs[0].Output.Mode)

			// B closing its session, or ending its turn, ends none of A's
			// calls.
			_, err := b.TurnEnded("S1", true)
			require.NoError(t, err)
			_, err = b.CloseSession("S1")
			require.NoError(t, err)
			got, ok := a.SessionStats("S1")
			require.True(t, ok)
			assert.Equal(t, 1, got.Calls)
			execs, _ = feedAll(t, a, "S1", nsDelta("c1", "x"))
			require.Len(t, execs, 1)
			assert.Equal(t, normalize.StateRunning, execs[0].State)

			// A's tombstones are A's: after A closes, a late frame of A is
			// refused, while B may use the same ids afresh.
			_, err = a.CloseSession("S1")
			require.NoError(t, err)
			_, errs = feedAll(t, a, "S1", nsDelta("c1", "late"))
			require.Len(t, errs, 1)
			assert.Equal(t, normalize.FailedPrecondition, errs[0].Code)
			assert.Contains(t, errs[0].Message, "after 5 revisions") // 4 of A's, and the one closing ended
			execs, errs = feedAll(t, n.Namespace("team-c"), "S1", nsOpen("c1", "ls"))
			assert.Empty(t, errs, "C is not refused by A's tombstone")
			require.Len(t, execs, 1)
			assert.Equal(t, uint32(1), execs[0].Revision)
			for _, v := range []*normalize.Normalizer{a, n, n.Namespace("team-c")} {
				_, err = v.CloseSession("S1")
				require.NoError(t, err)
			}
		})
	}
}

// Terminals and permission asks are looked up in the request's namespace
// only: B's output by terminal id and B's answer to A's ask reach nothing
// of A's.
func TestNamespacesKeepTerminalsAndAsksApart(t *testing.T) {
	n := normalize.New()
	a, b := n.Namespace("a"), n.Namespace("b")
	_, errs := feedAll(t, a, "s", nsOpen("c1", "make"), nsTerminal("c1", "term-1"), nsAsk(7, "c2", "rm -rf build"))
	require.Empty(t, errs)

	execs, errs := feedAll(t, b, "s", nsTermOutput("term-1", "injected"))
	assert.Empty(t, execs)
	require.Len(t, errs, 1)
	assert.Equal(t, normalize.FailedPrecondition, errs[0].Code)
	assert.NotContains(t, errs[0].Message, "c1", "B's error names none of A's calls")

	execs, _ = feedAll(t, b, "s", nsAnswer(7, "reject"))
	assert.Empty(t, execs, "B's answer answers no ask of A's")

	got, ok := a.SessionStats("s")
	require.True(t, ok)
	assert.Equal(t, 1, got.Asks, "A's ask is still unanswered")
	assert.Equal(t, 1, got.Terminals)
	execs, _ = feedAll(t, a, "s", nsTermOutput("term-1", "mine"))
	require.Len(t, execs, 1)
	assert.Equal(t, "c1", execs[0].ToolCallID)
	assert.Equal(t, "mine", execs[0].Output.Text)
}

// The sequences WithSkipApplied skips are counted per namespace, also
// through a store shared by two Normalizers.
func TestNamespacesSkipAppliedApart(t *testing.T) {
	st := store.NewMemory()
	one, two := normalize.New(normalize.WithStore(st)), normalize.New(normalize.WithStore(st))
	skip := func(n *normalize.Normalizer, seq uint64, f []byte) []*normalize.FrameError {
		var errs []*normalize.FrameError
		_, err := n.Feed("s", f, normalize.WithSequence(seq), normalize.WithSkipApplied(), normalize.WithEmit(func(ev normalize.Event) error {
			if ev.Error != nil {
				errs = append(errs, ev.Error)
			}
			return nil
		}))
		require.NoError(t, err)
		return errs
	}
	assert.Empty(t, skip(one.Namespace("a"), 50, nsOpen("c1", "true")))
	assert.Empty(t, skip(two.Namespace("b"), 1, nsOpen("c1", "true")), "B's sequence 1 is not A's")
	errs := skip(two.Namespace("a"), 50, nsDelta("c1", "x"))
	assert.Empty(t, errs, "A's frame 50 sent again is answered with what it made")
	errs = skip(two.Namespace("a"), 49, nsDelta("c1", "x"))
	require.Len(t, errs, 1)
	assert.Equal(t, normalize.AlreadyExists, errs[0].Code)
}

// The default namespace keeps the store keys sessions had before
// namespaces: a session an older build stored is found again, and a
// named namespace's session is elsewhere.
func TestNamespaceStoreKeys(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	n := normalize.New(normalize.WithStore(st))
	_, errs := feedAll(t, n, "s", nsOpen("c1", "true"))
	require.Empty(t, errs)
	snap, err := st.Load(ctx, "s")
	require.NoError(t, err)
	v := snap.Version
	assert.NotZero(t, v, "the default namespace stores session s under its id")

	_, errs = feedAll(t, n.Namespace("team-a"), "s", nsOpen("c1", "true"))
	require.Empty(t, errs)
	snap, err = st.Load(ctx, "s")
	require.NoError(t, err)
	assert.Equal(t, v, snap.Version, "team-a's session s is not stored under s")

	// Another Normalizer of the store goes on with each.
	other := normalize.New(normalize.WithStore(st))
	for _, view := range []*normalize.Normalizer{other, other.Namespace("team-a")} {
		execs, errs := feedAll(t, view, "s", nsDelta("c1", "out"))
		require.Empty(t, errs)
		require.Len(t, execs, 1)
		assert.Equal(t, uint32(2), execs[0].Revision)
	}
}

// A namespace at its quota is refused, naming the quota; another
// namespace's frames still apply, and RefusedIn names the namespace.
func TestQuota(t *testing.T) {
	for _, c := range []struct {
		name  string
		quota normalize.Quota
		fill  func(t *testing.T, n *normalize.Normalizer) []*normalize.FrameError
		limit string
		says  string
	}{
		{"sessions", normalize.Quota{Sessions: 2}, func(t *testing.T, n *normalize.Normalizer) []*normalize.FrameError {
			var all []*normalize.FrameError
			for _, id := range []string{"s1", "s2", "s3"} {
				_, errs := feedAll(t, n, id, nsOpen("c1", "true"))
				all = append(all, errs...)
			}
			return all
		}, normalize.LimitQuotaSessions, "--quota-sessions"},
		{"calls", normalize.Quota{Calls: 2}, func(t *testing.T, n *normalize.Normalizer) []*normalize.FrameError {
			_, errs := feedAll(t, n, "s1", nsOpen("c1", "true"), nsOpen("c2", "true"))
			_, more := feedAll(t, n, "s2", nsOpen("c3", "true"))
			return append(errs, more...)
		}, normalize.LimitQuotaCalls, "--quota-calls"},
		{"memory", normalize.Quota{Memory: 32 << 10}, func(t *testing.T, n *normalize.Normalizer) []*normalize.FrameError {
			_, errs := feedAll(t, n, "s1", nsOpen("c1", "cat"))
			for range 40 {
				_, more := feedAll(t, n, "s1", nsDelta("c1", strings.Repeat("x", 2<<10)))
				errs = append(errs, more...)
			}
			return errs
		}, normalize.LimitQuotaMemory, "--quota-memory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			refused := map[[2]string]int{}
			n := normalize.New(normalize.WithQuota(c.quota), normalize.WithHooks(normalize.Hooks{
				RefusedIn: func(ns, limit string) { mu.Lock(); refused[[2]string{ns, limit}]++; mu.Unlock() },
			}))
			errs := c.fill(t, n.Namespace("a"))
			require.NotEmpty(t, errs, "frames past the quota are refused")
			for _, fe := range errs {
				assert.Equal(t, normalize.ResourceExhausted, fe.Code)
				assert.Contains(t, fe.Message, c.says)
				assert.Contains(t, fe.Message, "WithQuota")
			}
			refusedA := len(errs)
			assert.Equal(t, map[[2]string]int{{"a", c.limit}: refusedA}, refused)

			// b has a quota of its own, which a's use leaves whole: the
			// same frames are refused as many times.
			errs = c.fill(t, n.Namespace("b"))
			assert.Len(t, errs, refusedA)
			assert.Equal(t, refusedA, refused[[2]string{"b", c.limit}])
			// The default namespace has one as well.
			errs = c.fill(t, n)
			assert.Len(t, errs, refusedA)
			assert.Equal(t, refusedA, refused[[2]string{"", c.limit}])
		})
	}
}

// A quota is released with what it counted: a namespace whose sessions
// are closed may open as many again.
func TestQuotaReleased(t *testing.T) {
	n := normalize.New(normalize.WithQuota(normalize.Quota{Sessions: 1, Calls: 1, Memory: 32 << 10}))
	a := n.Namespace("a")
	for i := range 3 {
		id := "s" + itoa(i) // a new session each round: no tombstone refuses its call
		_, errs := feedAll(t, a, id, nsOpen("c1", "cat"), nsDelta("c1", strings.Repeat("x", 2<<10)), nsDelta("c1", strings.Repeat("x", 2<<10)))
		require.Empty(t, errs, "round %d", i)
		_, err := a.CloseSession(id)
		require.NoError(t, err)
		st := n.Stats()
		assert.Zero(t, st.Sessions)
		assert.Zero(t, st.Calls)
		assert.Zero(t, st.HeldBytes)
	}
	// A session that only its tombstones refuse still counts while held.
	_, err := a.Feed("s0", nsOpen("c1", "cat"))
	var fe *normalize.FrameError
	require.True(t, errors.As(err, &fe))
	assert.Equal(t, normalize.FailedPrecondition, fe.Code)
	_, errs := feedAll(t, a, "s9", nsOpen("c1", "cat"))
	require.Len(t, errs, 1)
	assert.Equal(t, normalize.ResourceExhausted, errs[0].Code)
}

// A negative quota is a mistake Check names.
func TestQuotaChecked(t *testing.T) {
	err := normalize.Check(normalize.WithQuota(normalize.Quota{Calls: -1}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "quota")
}

// A namespace that releases calls without end cannot push another's
// tombstones out: the bound is shared, and what goes first when it is full
// is the oldest tombstone of the namespace holding the most.
func TestNamespacesKeepTombstonesApart(t *testing.T) {
	const limit = 16
	n := normalize.New(normalize.WithTombstones(limit))
	a, b := n.Namespace("team-a"), n.Namespace("team-b")
	for _, c := range []string{"b1", "b2", "b3"} {
		_, errs := feedAll(t, b, "S1", nsOpen(c, "make"))
		require.Empty(t, errs)
	}
	_, err := b.CloseSession("S1")
	require.NoError(t, err)

	for i := range 10 * limit {
		s := "A" + itoa(i)
		_, errs := feedAll(t, a, s, nsOpen("c1", "true"))
		require.Empty(t, errs)
		_, err := a.CloseSession(s)
		require.NoError(t, err)
	}
	assert.LessOrEqual(t, n.Stats().Tombstones, limit, "the bound holds for all namespaces together")

	for _, c := range []string{"b1", "b2", "b3"} {
		execs, errs := feedAll(t, b, "S1", nsDelta(c, "late"))
		assert.Empty(t, execs, "B's released call %s is not reopened", c)
		if assert.Len(t, errs, 1, "B's late frame about %s is refused", c) {
			assert.Equal(t, normalize.FailedPrecondition, errs[0].Code)
		}
	}
	// A's own newest tombstones are kept, its oldest were dropped.
	_, errs := feedAll(t, a, "A"+itoa(10*limit-1), nsDelta("c1", "late"))
	require.Len(t, errs, 1)
	assert.Equal(t, normalize.FailedPrecondition, errs[0].Code)
	execs, errs := feedAll(t, a, "A0", nsDelta("c1", "late"))
	assert.Empty(t, errs)
	assert.Len(t, execs, 1, "A's oldest tombstone made way")
}
