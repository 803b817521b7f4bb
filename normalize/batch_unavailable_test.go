package normalize_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/acpnorm/acpnorm/normalize"
	"github.com/acpnorm/acpnorm/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unackedCommits is a store whose commits, once armed, are applied but
// not acknowledged.
type unackedCommits struct {
	flaky
	unacked bool
}

func (u *unackedCommits) Commit(ctx context.Context, id string, base uint64, c *store.Change) (uint64, error) {
	v, err := u.flaky.Commit(ctx, id, base, c)
	if err == nil && u.unacked {
		return v, fmt.Errorf("%w: replica lag", store.ErrUnacknowledged)
	}
	return v, err
}

// batchErrors feeds frames from to to (numbered from 1) of the recording
// as one batch and returns what it produced: the FrameErrors, and how
// many revisions.
func batchErrors(t *testing.T, n *normalize.Normalizer, id string, fs []normalize.Frame) ([]*normalize.FrameError, int) {
	t.Helper()
	var errs []*normalize.FrameError
	execs := 0
	_, err := n.FeedBatch(id, fs, normalize.WithSkipApplied(), normalize.WithEmit(func(ev normalize.Event) error {
		if ev.Error != nil {
			errs = append(errs, ev.Error)
		} else {
			execs++
		}
		return nil
	}))
	require.NoError(t, err)
	return errs, execs
}

// numbered is frames from to to (from 1) of the recording as a batch.
func numbered(fs [][]byte, from, to int) []normalize.Frame {
	var b []normalize.Frame
	for i := from; i <= to; i++ {
		b = append(b, normalize.Frame{Message: fs[i-1], Sequence: uint64(i)})
	}
	return b
}

// assertEachNotApplied checks that errs answers each of the sequences
// seqs, in order, with one Unavailable FrameError naming that sequence
// and saying its batch was not applied (taken).
func assertEachNotApplied(t *testing.T, errs []*normalize.FrameError, session string, seqs ...uint64) {
	t.Helper()
	require.Len(t, errs, len(seqs), "one FrameError for each request of the batch: %v", errs)
	for i, fe := range errs {
		assert.Equal(t, normalize.Unavailable, fe.Code, "%v", fe)
		assert.Equal(t, session, fe.SessionID)
		assert.Equal(t, seqs[i], fe.Sequence, "answers in sequence order: %v", errs)
		assert.Contains(t, fe.Message, fmt.Sprintf("frame %d of session %q", seqs[i], session))
		assert.Contains(t, fe.Message, fmt.Sprintf("batch of frames %d to %d", seqs[0], seqs[len(seqs)-1]))
	}
}

// A batch whose commit the store refuses: each of its requests gets a
// FrameError of its own, Unavailable, in order; none says it stands for
// the others, and none was applied (sent again, the batch gives what a
// batch fed once gives).
func TestFeedBatchCommitFailsAnswersEachFrame(t *testing.T) {
	fs := frames(recording)
	st := &flaky{Store: store.NewMemory()}
	n := normalize.New(normalize.WithStore(st))
	_, _ = batchErrors(t, n, "s", numbered(fs, 1, 10))
	st.broken.Store(true)
	errs, execs := batchErrors(t, n, "s", numbered(fs, 11, 14))
	st.broken.Store(false)
	assert.Zero(t, execs)
	assertEachNotApplied(t, errs, "s", 11, 12, 13, 14)
	for _, fe := range errs {
		assert.Contains(t, fe.Message, "not applied")
	}

	ref := normalize.New()
	_, _ = batchErrors(t, ref, "s", numbered(fs, 1, 10))
	wantErrs, want := batchErrors(t, ref, "s", numbered(fs, 11, 14))
	gotErrs, got := batchErrors(t, n, "s", numbered(fs, 11, 14))
	assert.Equal(t, want, got)
	assert.Equal(t, len(wantErrs), len(gotErrs))
}

// The store stalls as a fresh session's first two requests, read ahead
// together, are applied (its load fails): each gets its FrameError.
func TestFeedBatchLoadFailsAnswersEachFrame(t *testing.T) {
	fs := frames(recording)
	st := &flaky{Store: store.NewMemory()}
	st.broken.Store(true)
	n := normalize.New(normalize.WithStore(st))
	errs, execs := batchErrors(t, n, "fresh", numbered(fs, 1, 2))
	assert.Zero(t, execs)
	assertEachNotApplied(t, errs, "fresh", 1, 2)
}

// A batch's first frame is refused before its session is taken (its
// message is empty), then taking the session fails: the first keeps its
// own answer, and each later one gets an Unavailable of its own.
func TestFeedBatchLoadFailsAfterARefusal(t *testing.T) {
	fs := frames(recording)
	st := &flaky{Store: store.NewMemory()}
	st.broken.Store(true)
	n := normalize.New(normalize.WithStore(st))
	batch := append([]normalize.Frame{{Sequence: 1}}, numbered(fs, 2, 4)...)
	errs, execs := batchErrors(t, n, "s", batch)
	assert.Zero(t, execs)
	require.NotEmpty(t, errs)
	assert.Equal(t, normalize.InvalidArgument, errs[0].Code, "%v", errs[0])
	assert.EqualValues(t, 1, errs[0].Sequence)
	assertEachNotApplied(t, errs[1:], "s", 2, 3, 4)
}

// A batch the store took but did not acknowledge: each request is told
// to be sent again, with its own FrameError.
func TestFeedBatchUnacknowledgedAnswersEachFrame(t *testing.T) {
	fs := frames(recording)
	st := &unackedCommits{flaky: flaky{Store: store.NewMemory()}}
	n := normalize.New(normalize.WithStore(st))
	_, _ = batchErrors(t, n, "s", numbered(fs, 1, 10))
	st.unacked = true
	errs, execs := batchErrors(t, n, "s", numbered(fs, 11, 13))
	assert.Zero(t, execs)
	assertEachNotApplied(t, errs, "s", 11, 12, 13)
	for _, fe := range errs {
		assert.Contains(t, fe.Message, "not acknowledged")
	}
}
