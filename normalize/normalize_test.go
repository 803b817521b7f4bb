package normalize_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/acpnorm/acpnorm/normalize"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const recording = "testdata/opencode-1.18.33_bash-ask_scenario-dev.ndjson"

// folded feeds a recording under session id and returns each call's final
// state, output folded, in a stable text form.
func folded(t *testing.T, n *normalize.Normalizer, id string) string {
	t.Helper()
	out := map[string]string{}
	last := map[string]*normalize.ShellExec{}
	var order []string
	for i, f := range frames(recording) {
		execs, err := n.Feed(id, f, normalize.WithSequence(uint64(i+1)))
		if err != nil {
			t.Errorf("frame %d: %v", i+1, err)
		}
		for _, x := range execs {
			if x.SessionID != id || x.Sequence != uint64(i+1) {
				t.Errorf("revision of session %q seq %d, fed as %q seq %d", x.SessionID, x.Sequence, id, i+1)
			}
			if p := last[x.ToolCallID]; p == nil {
				order = append(order, x.ToolCallID)
				if x.Revision != 1 {
					t.Errorf("%s starts at revision %d", x.ToolCallID, x.Revision)
				}
			} else if x.Revision != p.Revision+1 {
				t.Errorf("%s: revision %d after %d", x.ToolCallID, x.Revision, p.Revision)
			}
			last[x.ToolCallID] = x
			out[x.ToolCallID] = x.Output.Apply(out[x.ToolCallID])
		}
	}
	var b strings.Builder
	for _, id := range order {
		x := last[id]
		fmt.Fprintf(&b, "%s %s %s %q\n", x.Command, x.State, x.Outcome, out[id])
	}
	return b.String()
}

// Sessions fed from many goroutines at once come out as when fed alone
// (run with -race).
func TestConcurrentSessions(t *testing.T) {
	want := folded(t, normalize.New(), "alone")
	if !strings.Contains(want, "FAILED") || !strings.Contains(want, "CANCELLED") {
		t.Fatalf("the recording folds to:\n%s", want)
	}
	n := normalize.New()
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			assert.Equal(t, want, folded(t, n, fmt.Sprint("s", g)), "session s%d", g)
		})
	}
	wg.Wait()
	if st := n.Stats(); st.Sessions != 6 || st.Calls != 18 {
		t.Fatalf("stats %+v, want 6 sessions of 3 calls", st)
	}
	for g := range 6 {
		if _, err := n.CloseSession(fmt.Sprint("s", g)); err != nil {
			t.Fatal(err)
		}
	}
	if st := n.Stats(); st.Sessions != 0 || st.Calls != 0 || st.HeldBytes != 0 || st.Tombstones != 18 {
		t.Fatalf("after closing every session: %+v", st)
	}
}

// Each bad frame gives a *FrameError naming the problem, and the session
// goes on.
func TestFrameErrors(t *testing.T) {
	n := normalize.New(normalize.WithMaxSessions(1))
	fs := frames(recording)
	for _, c := range []struct {
		name string
		feed func() error
		code normalize.Code
		says string
	}{
		{"not JSON", func() error { _, err := n.Feed("s", []byte("{")); return err }, normalize.InvalidArgument, "frame 0"},
		{"unknown dialect", func() error { _, err := n.Feed("s", fs[0], normalize.WithDialect("nope")); return err }, normalize.InvalidArgument, `unknown dialect "nope"`},
		// A bad cwd is left out and the frame applies: to the session
		// held below, so that the limit stays at one.
		{"relative cwd", func() error { _, err := n.Feed("first", fs[0], normalize.WithCwd("rel")); return err }, normalize.InvalidArgument, "not absolute"},
		// A client's string is never echoed whole.
		{"long unknown dialect", func() error {
			_, err := n.Feed("s", fs[0], normalize.WithDialect(strings.Repeat("d", 100000)))
			return err
		}, normalize.InvalidArgument, `unknown dialect "dddd`},
		{"long relative cwd", func() error {
			_, err := n.Feed("first", fs[0], normalize.WithCwd(strings.Repeat("r", 100000)))
			return err
		}, normalize.InvalidArgument, "(100000 bytes)"},
		{"no session", func() error { _, err := n.Feed("", fs[0], normalize.WithSequence(7)); return err }, normalize.InvalidArgument, "frame 7 has no session_id"},
		{"session limit", func() error {
			if _, err := n.Feed("first", fs[0]); err != nil {
				return err
			}
			_, err := n.Feed("second", fs[0])
			return err
		}, normalize.ResourceExhausted, "1 sessions"},
	} {
		err := c.feed()
		var fe *normalize.FrameError
		if !errors.As(err, &fe) || fe.Code != c.code || !strings.Contains(fe.Message, c.says) || len(fe.Message) > 512 {
			t.Errorf("%s: %.600v (%.600v), want %v saying %q in at most 512 bytes", c.name, err, fe.Message, c.code, c.says)
		}
	}
	// The session that was held goes on.
	for _, f := range fs {
		if _, err := n.Feed("first", f); err != nil {
			t.Fatal(err)
		}
	}
}

// A limit's FrameError names the limit so that either kind of caller can
// find it: the option an embedder sets and the acpnormd flag.
func TestLimitErrorsNameOption(t *testing.T) {
	fs := frames(recording)
	long := strings.Repeat("x", 40)
	for _, c := range []struct {
		name  string
		n     *normalize.Normalizer
		feed  func(n *normalize.Normalizer) error
		names []string
	}{
		{"session id", normalize.New(normalize.WithMaxIDBytes(16)), func(n *normalize.Normalizer) error {
			_, err := n.Feed(long, fs[0])
			return err
		}, []string{"WithMaxIDBytes", "--max-id-bytes"}},
		{"cwd", normalize.New(normalize.WithTextLimit(64)), func(n *normalize.Normalizer) error {
			_, err := n.Feed("s", fs[0], normalize.WithCwd("/"+strings.Repeat("d", 80)))
			return err
		}, []string{"WithTextLimit", "--text-limit"}},
		{"sessions", normalize.New(normalize.WithMaxSessions(1)), func(n *normalize.Normalizer) error {
			if _, err := n.Feed("first", fs[0]); err != nil {
				return err
			}
			_, err := n.Feed("second", fs[0])
			return err
		}, []string{"WithMaxSessions", "--max-sessions"}},
		{"calls per session", normalize.New(normalize.WithMaxCallsPerSession(1)), func(n *normalize.Normalizer) error {
			var errs []error
			for _, f := range fs {
				if _, err := n.Feed("s", f); err != nil {
					errs = append(errs, err)
				}
			}
			return errors.Join(errs...)
		}, []string{"WithMaxCallsPerSession", "--max-calls-per-session"}},
	} {
		err := c.feed(c.n)
		var fe *normalize.FrameError
		if !errors.As(err, &fe) {
			t.Errorf("%s: %v, want a FrameError", c.name, err)
			continue
		}
		for _, want := range c.names {
			if !strings.Contains(fe.Message, want) {
				t.Errorf("%s: %q does not name %s", c.name, fe.Message, want)
			}
		}
	}
}

// Hooks count what the limits refuse and the calls held.
func TestHooks(t *testing.T) {
	var mu sync.Mutex
	refused := map[string]int{}
	calls, sessions := 0, 0
	n := normalize.New(normalize.WithMaxCallsPerSession(1), normalize.WithHooks(normalize.Hooks{
		Refused:     func(l string) { mu.Lock(); refused[l]++; mu.Unlock() },
		CallsOpened: func(d int) { mu.Lock(); calls += d; mu.Unlock() },
		Sessions:    func(d int) { mu.Lock(); sessions += d; mu.Unlock() },
	}))
	for _, f := range frames(recording) {
		n.Feed("s", f)
	}
	if calls != 1 || sessions != 1 || refused[normalize.LimitCallsPerSession] == 0 {
		t.Fatalf("calls %d, sessions %d, refused %v", calls, sessions, refused)
	}
	n.CloseSession("s")
	if calls != 0 || sessions != 0 {
		t.Fatalf("after close: calls %d, sessions %d", calls, sessions)
	}
}

// An option value that cannot work panics in New, naming it.
func TestNewRefusesBadOption(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "text limit 10") {
			t.Fatalf("recovered %v", r)
		}
	}()
	normalize.New(normalize.WithTextLimit(10))
}

// Check says what New would panic on, and accepts what New accepts.
func TestCheck(t *testing.T) {
	if err := normalize.Check(normalize.WithTextLimit(10)); err == nil || !strings.Contains(err.Error(), "text limit 10") {
		t.Fatalf("Check(WithTextLimit(10)) = %v", err)
	}
	if err := normalize.Check(normalize.WithMaxCalls(1), normalize.WithMaxCallsPerSession(2)); err == nil || !strings.Contains(err.Error(), "max calls 1") {
		t.Fatalf("Check(max calls below per session) = %v", err)
	}
	require.NoError(t, normalize.Check(), "Check() of the defaults =")
}

func TestDialectsAndCapabilities(t *testing.T) {
	list, detection := normalize.Dialects()
	if len(list) < 2 || detection == "" {
		t.Fatalf("%d dialects, detection %q", len(list), detection)
	}
	for _, d := range list {
		caps, name, err := normalize.ClientCapabilities(d.Name)
		if err != nil || name != d.Name || !strings.HasPrefix(caps, "{") {
			t.Errorf("%s: %q %q %v", d.Name, caps, name, err)
		}
	}
	if _, _, err := normalize.ClientCapabilities("nope"); err == nil {
		t.Fatal("unknown dialect accepted")
	}
	// A caller's name of any length is quoted short, with its length: a
	// service passes this error to its client.
	long := strings.Repeat("x", 1<<20)
	_, _, err := normalize.ClientCapabilities(long)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown dialect "xxxx`)
	assert.Contains(t, err.Error(), fmt.Sprintf("(%d bytes)", len(long)))
	assert.Less(t, len(err.Error()), 256)
}
