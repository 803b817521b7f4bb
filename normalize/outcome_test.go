package normalize_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/internal/testredis"
	"github.com/acpnorm/acpnorm/normalize"
	"github.com/acpnorm/acpnorm/store"
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
	t.Log(fe.Message)

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

// appliedThenTimeout is a store whose commits, once armed, are applied
// but answered with an error that says nothing of the outcome, as a
// networked store's timeout.
type appliedThenTimeout struct {
	flaky
	armed bool
}

func (a *appliedThenTimeout) Commit(ctx context.Context, id string, base uint64, c *store.Change) (uint64, error) {
	v, err := a.flaky.Commit(ctx, id, base, c)
	if err == nil && a.armed {
		return 0, errors.New("i/o timeout")
	}
	return v, err
}

// A batch whose commit fails with an unknown outcome: each frame is told
// so, none that it was not applied; sent again with skipped applied
// sequences, the batch is answered as applied, not applied twice. A
// commit the store says it did not apply (store.ErrNotApplied), or a
// session that could not be loaded, is still "not applied".
func TestFeedBatchOutcomeUnknownAnswersEachFrame(t *testing.T) {
	fs := frames(recording)
	st := &appliedThenTimeout{flaky: flaky{Store: store.NewMemory()}}
	n := normalize.New(normalize.WithStore(st))
	_, _ = batchErrors(t, n, "s", numbered(fs, 1, 10))
	st.armed = true
	errs, execs := batchErrors(t, n, "s", numbered(fs, 11, 14))
	st.armed = false
	assert.Zero(t, execs)
	require.Len(t, errs, 4)
	for i, fe := range errs {
		assert.Equal(t, normalize.Unavailable, fe.Code)
		assert.EqualValues(t, 11+i, fe.Sequence)
		assert.NotContains(t, fe.Message, "not applied")
		assert.Contains(t, fe.Message, fmt.Sprintf("frame %d of session \"s\" may or may not have been applied: ", 11+i))
		assert.Contains(t, fe.Message, "and so may the rest of the batch of frames 11 to 14")
		assert.Contains(t, fe.Message, "sent again without them, it may be applied twice")
	}
	// It was applied: sent again, every frame is answered as applied
	// before (its kept answers), and the session goes on as one fed once.
	ref := normalize.New()
	_, _ = batchErrors(t, ref, "s", numbered(fs, 1, 14))
	_, want := batchErrors(t, ref, "s", numbered(fs, 15, 20))
	again, _ := batchErrors(t, n, "s", numbered(fs, 11, 14))
	assert.Empty(t, again)
	_, got := batchErrors(t, n, "s", numbered(fs, 15, 20))
	assert.Equal(t, want, got, "the batch answered with an unknown outcome was applied once")

	// A commit the store did not apply, and a load that failed, are
	// "not applied".
	st.broken.Store(true)
	errs, _ = batchErrors(t, n, "s", numbered(fs, 21, 22))
	assertEachNotApplied(t, errs, "s", 21, 22)
	for _, fe := range errs {
		assert.Contains(t, fe.Message, "was not applied")
	}
	cold := normalize.New(normalize.WithStore(st))
	errs, _ = batchErrors(t, cold, "s", numbered(fs, 21, 22))
	assertEachNotApplied(t, errs, "s", 21, 22)
	for _, fe := range errs {
		assert.Contains(t, fe.Message, "was not applied")
	}
}
