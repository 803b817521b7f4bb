package service

import (
	"log/slog"
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/internal/testlog"
	"github.com/acpnorm/acpnorm/internal/testredis"
	"github.com/acpnorm/acpnorm/normalize"
	"github.com/acpnorm/acpnorm/store/redisstore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A store that stops answering is logged once with its error, not once a
// frame, and its return once, with how many operations failed: an
// operator reads what failed and when it came back. A real redis-server
// is stopped and started again under the sessions.
func TestStoreFailuresLogged(t *testing.T) {
	srv := testredis.StartServer(t)
	st, err := redisstore.Open(srv.URL)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	var out testlog.Buffer
	cfg := DefaultConfig()
	cfg.Store = st
	ss := newSessions(cfg, NewMetrics(nil), slog.New(slog.NewTextHandler(&out, nil)))
	feed := func(session string) []*normalize.FrameError { return feedOpen(t, ss.n, session) }
	require.Empty(t, feed("a"))
	srv.Stop()
	for _, s := range []string{"b", "c", "d"} {
		errs := feed(s)
		require.NotEmpty(t, errs, "session %s with the store stopped", s)
		assert.Equal(t, normalize.Unavailable, errs[0].Code)
	}
	lines := out.Lines()
	require.Len(t, lines, 1, "one line for the failures: %q", lines)
	assert.Contains(t, lines[0], "store: an operation failed")
	assert.Contains(t, lines[0], "error=")

	srv.Start()
	deadline := time.Now().Add(10 * time.Second)
	for len(feed("e")) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	lines = out.Lines()
	require.Len(t, lines, 2, "%q", lines)
	assert.Contains(t, lines[1], "store: answering again")
	assert.Contains(t, lines[1], "failed_operations=")
}

// While the store keeps failing, storeLog says so again every
// storeLogEvery, not on each failure.
func TestStoreLogStillFailing(t *testing.T) {
	var out testlog.Buffer
	now := time.Unix(0, 0)
	l := newStoreLog(slog.New(slog.NewTextHandler(&out, nil)), func() time.Time { return now })
	for range 100 {
		l.failure("commit", assert.AnError)
		now = now.Add(time.Second)
	}
	l.result("conflict")
	lines := out.Lines()
	// The first failure, then one line at 30 s, 60 s and 90 s, and the return.
	require.Len(t, lines, 5, "%q", lines)
	assert.Contains(t, lines[1], "store: still failing")
	assert.Contains(t, lines[1], "failed_operations=31")
	assert.Contains(t, lines[4], "failed_operations=100")
	l.result("ok")
	assert.Len(t, out.Lines(), 5, "nothing more while it answers")
}

// feedOpen feeds n a frame that opens call c1 in session, and returns the
// FrameErrors it gave.
func feedOpen(t *testing.T, n *normalize.Normalizer, session string) []*normalize.FrameError {
	t.Helper()
	var errs []*normalize.FrameError
	_, err := n.Feed(session, []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","title":"ls","status":"in_progress","rawInput":{"command":"ls"}}}}`),
		normalize.WithEmit(func(ev normalize.Event) error {
			if ev.Error != nil {
				errs = append(errs, ev.Error)
			}
			return nil
		}))
	require.NoError(t, err)
	return errs
}
