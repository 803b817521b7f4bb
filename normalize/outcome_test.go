package normalize_test

import (
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/internal/testredis"
	"github.com/acpnorm/acpnorm/normalize"
	"github.com/acpnorm/acpnorm/store/redisstore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A commit whose reply never came (Redis stopped past the store's read
// timeout) may still be applied: Redis, going on, runs the commit it had
// read. Its frame is refused (Unavailable), but not as "not applied",
// which would have a client without skipped applied sequences send it
// again and apply it twice; the answer says the outcome is unknown and
// how to send it again safely. Sent again so, it is answered as applied,
// not applied a second time.
func TestStoreTimeoutOutcomeUnknown(t *testing.T) {
	fs := frames(recording)
	// The first frame, past the session's start, that hands on a
	// revision: applying it commits.
	ref := normalize.New()
	at := -1
	for i, f := range fs {
		execs, err := ref.Feed("s", f, normalize.WithSequence(uint64(i+1)))
		require.NoError(t, err)
		if i >= 3 && len(execs) > 0 {
			at = i
			break
		}
	}
	require.Positive(t, at, "no frame of the recording hands on a revision")

	srv := testredis.StartServer(t)
	st, err := redisstore.Open(srv.URL + "?read_timeout=200ms&max_retries=1")
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	n := normalize.New(normalize.WithStore(st))
	feed := func(i int) []*normalize.Event {
		var evs []*normalize.Event
		_, err := n.Feed("s", fs[i], normalize.WithSequence(uint64(i+1)), normalize.WithSkipApplied(), normalize.WithEmit(func(ev normalize.Event) error {
			evs = append(evs, &ev)
			return nil
		}))
		require.NoError(t, err)
		return evs
	}
	for i := range at {
		for _, ev := range feed(i) {
			require.Nil(t, ev.Error, "frame %d", i+1)
		}
	}
	before, err := st.Load(t.Context(), "s")
	require.NoError(t, err)

	srv.Pause()
	resumed := make(chan struct{})
	go func() {
		defer close(resumed)
		time.Sleep(2 * time.Second)
		srv.Resume()
	}()
	evs := feed(at)
	<-resumed
	require.Len(t, evs, 1, "one answer for the frame")
	fe := evs[0].Error
	require.NotNil(t, fe, "the frame was answered with %+v while Redis was stopped", evs[0].ShellExec)
	assert.Equal(t, normalize.Unavailable, fe.Code)
	assert.NotContains(t, fe.Message, "was not applied")
	assert.Contains(t, fe.Message, "may or may not have been applied")
	assert.Contains(t, fe.Message, "skipped applied sequences")

	// Redis ran the commit once it went on: the outcome was not "not
	// applied".
	var after uint64
	require.Eventually(t, func() bool {
		snap, err := st.Load(t.Context(), "s")
		if err != nil {
			return false
		}
		after = snap.Version
		return true
	}, 10*time.Second, 50*time.Millisecond)
	assert.NotEqual(t, before.Version, after, "the stopped Redis did not apply the commit once it went on; the test shows nothing")

	// Sent again with skipped applied sequences, as the answer says: it
	// is answered as applied, not applied again.
	again := feed(at)
	for _, ev := range again {
		if ev.Error != nil {
			assert.Contains(t, ev.Error.Message, "already", "%v", ev.Error)
		}
	}
	snap, err := st.Load(t.Context(), "s")
	require.NoError(t, err)
	assert.Equal(t, after, snap.Version, "the frame sent again was applied a second time")
}
