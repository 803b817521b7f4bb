package normalize_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/acpnorm/acpnorm/normalize"
	"github.com/acpnorm/acpnorm/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keptUnacked is the memory store, except that while armed a commit is
// applied and then reported not acknowledged, as a Redis master does when
// WAIT times out on a replica that stopped answering.
type keptUnacked struct {
	store.Store
	armed atomic.Bool
}

func (k *keptUnacked) Commit(ctx context.Context, session string, base uint64, c *store.Change) (uint64, error) {
	v, err := k.Store.Commit(ctx, session, base, c)
	if err == nil && k.armed.Load() {
		return 0, fmt.Errorf("%w: version %d applied, no replica acknowledged it", store.ErrUnacknowledged, v)
	}
	return v, err
}

// A frame whose commit the store kept but did not acknowledge is refused
// (UNAVAILABLE); sent again with skipped applied sequences, it is answered
// with the revisions it made when it was applied (marked Again), not
// ALREADY_EXISTS with none, so the call's ENDED revision is not lost. The
// answer is kept in the store with the commit: another Normalizer on the
// same store answers the same, and so does this one every time.
func TestKeptUnacknowledgedFrameIsAnsweredWhenSentAgain(t *testing.T) {
	st := &keptUnacked{Store: store.NewMemory()}
	n := normalize.New(normalize.WithStore(st))
	feed := func(n *normalize.Normalizer, seq uint64, msg []byte) ([]*normalize.ShellExec, []*normalize.FrameError) {
		t.Helper()
		return splitEvents(feedSkipping(t, n, seq, msg))
	}
	execs, errs := feed(n, 1, nsOpen("c1", "make"))
	require.Empty(t, errs)
	require.Len(t, execs, 1)
	execs, errs = feed(n, 2, nsDelta("c1", "built\\n"))
	require.Empty(t, errs)
	require.Len(t, execs, 1)

	st.armed.Store(true)
	end := nsUpdate(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","_meta":{"terminal_exit":{"terminal_id":"c1","exit_code":2}}}`)
	execs, errs = feed(n, 3, end)
	assert.Empty(t, execs, "a frame not acknowledged hands on no revision")
	require.Len(t, errs, 1)
	assert.Equal(t, normalize.Unavailable, errs[0].Code)
	assert.Contains(t, errs[0].Message, "not acknowledged")

	st.armed.Store(false)
	other := normalize.New(normalize.WithStore(st))
	for i, n := range []*normalize.Normalizer{n, n, other} {
		evs := feedSkipping(t, n, 3, end)
		execs, errs = splitEvents(evs)
		assert.Empty(t, errs, "try %d: the kept frame sent again is answered, not ALREADY_EXISTS", i)
		require.Len(t, execs, 1, "try %d: its revision, as it was made", i)
		assert.True(t, evs[0].Again, "marked as handed on again")
		assert.Equal(t, uint32(3), execs[0].Revision)
		assert.Equal(t, normalize.StateEnded, execs[0].State)
		assert.Equal(t, normalize.Failed, execs[0].Outcome)
		if assert.NotNil(t, execs[0].ExitCode) {
			assert.EqualValues(t, 2, *execs[0].ExitCode)
		}
	}
}

// A kept frame that made no revision is answered, sent again, as it was
// the first time: with nothing, not ALREADY_EXISTS, every time.
func TestKeptUnacknowledgedFrameWithoutRevisions(t *testing.T) {
	st := &keptUnacked{Store: store.NewMemory()}
	n := normalize.New(normalize.WithStore(st))
	var got []normalize.Event
	feed := func(seq uint64, msg []byte) {
		t.Helper()
		got = feedSkipping(t, n, seq, msg)
	}
	feed(1, nsOpen("c1", "make"))
	require.Len(t, got, 1)
	st.armed.Store(true)
	chat := nsUpdate(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"working"}}`)
	feed(2, chat)
	require.Len(t, got, 1)
	require.NotNil(t, got[0].Error)
	assert.Equal(t, normalize.Unavailable, got[0].Error.Code)
	st.armed.Store(false)
	feed(2, chat)
	assert.Empty(t, got, "answered as it was: with nothing")
	feed(2, chat)
	assert.Empty(t, got, "and again")
}

// After a later frame of the session was applied, the kept revisions are
// still handed on, marked Again: a consumer that already handed on a
// later revision of the call drops them (the service does, per stream).
func TestKeptUnacknowledgedFrameAfterALaterOne(t *testing.T) {
	st := &keptUnacked{Store: store.NewMemory()}
	n := normalize.New(normalize.WithStore(st))
	var evs []normalize.Event
	feed := func(seq uint64, msg []byte) {
		t.Helper()
		evs = feedSkipping(t, n, seq, msg)
	}
	feed(1, nsOpen("c1", "make"))
	st.armed.Store(true)
	feed(2, nsDelta("c1", "one\\n"))
	require.Len(t, evs, 1)
	assert.Equal(t, normalize.Unavailable, evs[0].Error.Code)
	st.armed.Store(false)
	feed(3, nsDelta("c1", "two\\n"))
	require.Len(t, evs, 1)
	assert.Equal(t, uint32(3), evs[0].ShellExec.Revision, "revision 2 was made by the kept frame")
	assert.False(t, evs[0].Again)
	feed(2, nsDelta("c1", "one\\n"))
	require.Len(t, evs, 1)
	require.NotNil(t, evs[0].ShellExec)
	assert.Equal(t, uint32(2), evs[0].ShellExec.Revision)
	assert.True(t, evs[0].Again, "handed on again, for the consumer to drop after revision 3")
}

// A kept batch sent again as a batch hands each frame's revisions on,
// in order, every time.
func TestKeptUnacknowledgedBatchSentAgain(t *testing.T) {
	st := &keptUnacked{Store: store.NewMemory()}
	n := normalize.New(normalize.WithStore(st))
	var got []normalize.Event
	batch := func(frames ...normalize.Frame) {
		t.Helper()
		got = got[:0]
		_, err := n.FeedBatch("S", frames, normalize.WithSkipApplied(), normalize.WithEmit(func(ev normalize.Event) error {
			got = append(got, ev)
			return nil
		}))
		require.NoError(t, err)
	}
	batch(normalize.Frame{Sequence: 1, Message: nsOpen("c1", "make")})
	require.Len(t, got, 1)
	st.armed.Store(true)
	two := []normalize.Frame{{Sequence: 2, Message: nsDelta("c1", "a\\n")}, {Sequence: 3, Message: nsDelta("c1", "b\\n")}}
	batch(two...)
	require.Len(t, got, 2, "a FrameError for each frame")
	for i, ev := range got {
		assert.Equal(t, normalize.Unavailable, ev.Error.Code)
		assert.Equal(t, two[i].Sequence, ev.Error.Sequence)
	}
	st.armed.Store(false)
	for range 2 {
		batch(two...)
		var revisions []uint32
		var seqs []uint64
		for _, ev := range got {
			require.Nil(t, ev.Error)
			require.True(t, ev.Again)
			revisions = append(revisions, ev.ShellExec.Revision)
			seqs = append(seqs, ev.ShellExec.Sequence)
		}
		assert.Equal(t, []uint32{2, 3}, revisions, "each revision once, in order")
		assert.Equal(t, []uint64{2, 3}, seqs, "each with the frame that made it")
	}
}

// feedSkipping feeds msg as frame seq of session S, skipping applied
// sequences, and returns every event it handed on.
func feedSkipping(t *testing.T, n *normalize.Normalizer, seq uint64, msg []byte) []normalize.Event {
	t.Helper()
	var got []normalize.Event
	_, err := n.Feed("S", msg, normalize.WithSequence(seq), normalize.WithSkipApplied(), normalize.WithEmit(func(ev normalize.Event) error {
		got = append(got, ev)
		return nil
	}))
	require.NoError(t, err)
	return got
}

// splitEvents splits events into revisions and FrameErrors.
func splitEvents(evs []normalize.Event) (execs []*normalize.ShellExec, errs []*normalize.FrameError) {
	for _, ev := range evs {
		if ev.ShellExec != nil {
			execs = append(execs, ev.ShellExec)
		} else {
			errs = append(errs, ev.Error)
		}
	}
	return execs, errs
}

// A kept frame whose answer is too large to keep with its commit (an
// ENDED revision carrying a long output whole) is still answered when
// sent again: the call's ENDED revision is made again from the call's
// state, with every text whole, instead of ALREADY_EXISTS with none,
// which left a client whose answer was lost with the call never ended.
func TestKeptUnacknowledgedFrameWithALargeEnd(t *testing.T) {
	big := strings.Repeat("0123456789abcdef\\n", 20000) // 340 KB of output as JSON, past what an answer keeps
	end := nsUpdate(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","_meta":{"terminal_output":{"terminal_id":"c1","data":"` + big + `"},"terminal_exit":{"terminal_id":"c1","exit_code":0}}}`)

	// What one Normalizer that loses nothing hands on.
	plain := normalize.New(normalize.WithStore(store.NewMemory()))
	feedSkipping(t, plain, 1, nsOpen("c1", "seq 1 20000"))
	want, errs := splitEvents(feedSkipping(t, plain, 2, end))
	require.Empty(t, errs)
	require.Len(t, want, 1)
	require.Equal(t, normalize.StateEnded, want[0].State)
	require.NotNil(t, want[0].Output)

	st := &keptUnacked{Store: store.NewMemory()}
	n := normalize.New(normalize.WithStore(st))
	feedSkipping(t, n, 1, nsOpen("c1", "seq 1 20000"))
	st.armed.Store(true)
	_, errs = splitEvents(feedSkipping(t, n, 2, end))
	require.Len(t, errs, 1)
	require.Equal(t, normalize.Unavailable, errs[0].Code)
	st.armed.Store(false)
	other := normalize.New(normalize.WithStore(st))
	for i, n := range []*normalize.Normalizer{n, other} {
		evs := feedSkipping(t, n, 2, end)
		execs, errs := splitEvents(evs)
		assert.Empty(t, errs, "try %d: the kept frame sent again is answered, not ALREADY_EXISTS", i)
		require.Len(t, execs, 1, "try %d: its ENDED revision", i)
		assert.True(t, evs[0].Again)
		assert.Equal(t, want[0].Revision, execs[0].Revision)
		assert.Equal(t, want[0].Sequence, execs[0].Sequence)
		assert.Equal(t, normalize.StateEnded, execs[0].State)
		assert.Equal(t, want[0].Outcome, execs[0].Outcome)
		if assert.NotNil(t, execs[0].Output) {
			assert.Equal(t, *want[0].Output, *execs[0].Output, "the output whole")
		}
	}
}

// Without a store, a frame applied with a FrameError (a command over the
// text limit, left out) and sent again after its answer was lost (a
// connection cut) is answered with that FrameError again before
// AlreadyExists: before, only AlreadyExists came, and the client never
// learned why the call had no command (probe R). The kept FrameErrors
// are bounded.
func TestFrameErrorAnsweredAgainWithoutAStore(t *testing.T) {
	n := normalize.New(normalize.WithTextLimit(64))
	long := strings.Repeat("x", 100)
	open := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","status":"in_progress","rawInput":{"command":"echo ` + long + `"}}}}`)
	_, first := splitEvents(feedSkipping(t, n, 1, open))
	require.Len(t, first, 1)
	assert.Equal(t, normalize.InvalidArgument, first[0].Code)
	assert.Contains(t, first[0].Message, "text limit")

	_, again := splitEvents(feedSkipping(t, n, 1, open))
	require.Len(t, again, 2)
	assert.Equal(t, first[0], again[0], "the same FrameError, answered again")
	assert.Equal(t, normalize.AlreadyExists, again[1].Code)

	// Only the last 64 are kept: the first frame's is gone after 64 more.
	for i := uint64(2); i <= 65; i++ {
		feedSkipping(t, n, i, []byte(strings.Replace(string(open), `"c1"`, fmt.Sprintf(`"c%d"`, i), 1)))
	}
	_, late := splitEvents(feedSkipping(t, n, 1, open))
	require.Len(t, late, 1)
	assert.Equal(t, normalize.AlreadyExists, late[0].Code)
}

// unreplicated is the rollback store (see loss_test.go) with a replica
// it waits for, as Redis with WAIT: a store.Confirmer. While the replica
// is cut off, a commit is applied and reported not acknowledged, and
// Confirm fails; setCut(false) lets the replica catch up, and failover
// loses every commit it does not hold (the master died, the replica took
// over).
type unreplicated struct {
	*rollback
	mu       sync.Mutex
	cut      bool
	replica  map[string]uint64 // the version the replica holds, per session
	confirms int
}

func newUnreplicated() *unreplicated {
	return &unreplicated{rollback: newRollback(), replica: map[string]uint64{}}
}

func (u *unreplicated) Commit(ctx context.Context, session string, base uint64, c *store.Change) (uint64, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	v, err := u.rollback.Commit(ctx, session, base, c)
	if err != nil {
		return v, err
	}
	if u.cut {
		return 0, fmt.Errorf("%w: version %d applied, no replica acknowledged it", store.ErrUnacknowledged, v)
	}
	u.replica[session] = v
	return v, nil
}

func (u *unreplicated) Confirm(ctx context.Context, session string) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.confirms++
	if v, _ := u.rollback.Version(ctx, session); v != u.replica[session] {
		return fmt.Errorf("%w: the replica holds version %d of %d", store.ErrUnacknowledged, u.replica[session], v)
	}
	return nil
}

func (u *unreplicated) Confirms() bool { return true }

func (u *unreplicated) setCut(cut bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.cut = cut
	if !cut {
		for s := range u.rollback.sessions {
			u.replica[s], _ = u.rollback.Version(context.Background(), s)
		}
	}
}

func (u *unreplicated) failover() {
	u.mu.Lock()
	defer u.mu.Unlock()
	for s := range u.rollback.sessions {
		u.rollback.back(s, u.replica[s])
	}
}

// Frames applied but not acknowledged (UNAVAILABLE) were never answered,
// also when the request that applied one had loaded the session, with
// the frames before it that were not acknowledged either: when a failover
// loses them all, they are sent again and applied as if for the first
// time, not refused as DATA_LOSS (the Normalizer handed none of them on).
func TestUnacknowledgedFramesLostInAFailoverAreAppliedAgain(t *testing.T) {
	st := newUnreplicated()
	n := normalize.New(normalize.WithStore(st))
	frames := [][]byte{nsOpen("c1", "make"), nsDelta("c1", "one\\n"), nsDelta("c1", "two\\n"), nsDelta("c1", "three\\n")}
	for i := range 2 {
		_, errs := splitEvents(feedSkipping(t, n, uint64(i+1), frames[i]))
		require.Empty(t, errs)
	}
	st.setCut(true)
	for i := 2; i < 4; i++ { // frame 4 loads the session, with frame 3
		evs := feedSkipping(t, n, uint64(i+1), frames[i])
		require.Len(t, evs, 1)
		require.NotNil(t, evs[0].Error)
		assert.Equal(t, normalize.Unavailable, evs[0].Error.Code)
	}
	st.failover()
	st.setCut(false)
	for i := 2; i < 4; i++ {
		execs, errs := splitEvents(feedSkipping(t, n, uint64(i+1), frames[i]))
		require.Empty(t, errs, "frame %d", i+1)
		require.Len(t, execs, 1, "frame %d", i+1)
		assert.Equal(t, uint32(i+1), execs[0].Revision)
	}
}

// A frame applied but not acknowledged (UNAVAILABLE) and sent again is
// answered as applied only once the store confirms the commit that
// applied it: until then it is refused the same way, by this Normalizer
// and another, for a frame that made a revision and one that made
// nothing alike, since a failover would lose it after the answer. Once
// the replica holds it, it is answered with what it made; when a
// failover lost it, it is applied as if for the first time (it was never
// answered: no DATA_LOSS).
func TestUnacknowledgedFrameSentAgainAnsweredOnlyOnceConfirmed(t *testing.T) {
	chat := nsUpdate(`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"working"}}`)
	for _, failover := range []bool{false, true} {
		t.Run(fmt.Sprintf("failover=%v", failover), func(t *testing.T) {
			st := newUnreplicated()
			n, other := normalize.New(normalize.WithStore(st)), normalize.New(normalize.WithStore(st))
			for i, msg := range [][]byte{nsOpen("c1", "make"), nsDelta("c1", "one\\n")} {
				_, errs := splitEvents(feedSkipping(t, n, uint64(i+1), msg))
				require.Empty(t, errs)
			}
			st.setCut(true)
			frames := map[uint64][]byte{3: nsDelta("c1", "two\\n"), 4: chat}
			for _, n := range []*normalize.Normalizer{n, n, other, n} {
				for seq := uint64(3); seq <= 4; seq++ {
					evs := feedSkipping(t, n, seq, frames[seq])
					require.Len(t, evs, 1, "frame %d: %+v", seq, evs)
					require.NotNil(t, evs[0].Error, "frame %d answered although the store did not confirm it", seq)
					assert.Equal(t, normalize.Unavailable, evs[0].Error.Code)
					assert.Contains(t, evs[0].Error.Message, "not acknowledged")
				}
			}
			assert.Positive(t, st.confirms)
			if failover {
				st.failover()
			}
			st.setCut(false)
			for _, n := range []*normalize.Normalizer{n, other} {
				evs := feedSkipping(t, n, 3, frames[3])
				execs, errs := splitEvents(evs)
				require.Empty(t, errs)
				require.Len(t, execs, 1)
				assert.Equal(t, uint32(3), execs[0].Revision)
				assert.Equal(t, !failover || n == other, evs[0].Again, "answered again, or applied after the failover")
				evs = feedSkipping(t, n, 4, chat)
				assert.Empty(t, evs, "frame 4 made nothing")
			}
		})
	}
}

// waitsForNothing is a Confirmer set to wait for nothing (Redis without
// WAIT): Confirms is false.
type waitsForNothing struct{ *unreplicated }

func (waitsForNothing) Confirms() bool { return false }

// A store that waits for nothing is never asked to confirm: a frame sent
// again is answered from what the store holds, with no round trip more.
func TestNoConfirmWhenTheStoreWaitsForNothing(t *testing.T) {
	st := waitsForNothing{newUnreplicated()}
	n := normalize.New(normalize.WithStore(st))
	require.Len(t, feedSkipping(t, n, 1, nsOpen("c1", "make")), 1)
	st.setCut(true) // Commit says "not acknowledged", Confirm would fail
	require.NotNil(t, feedSkipping(t, n, 2, nsDelta("c1", "one\\n"))[0].Error)
	evs := feedSkipping(t, n, 2, nsDelta("c1", "one\\n"))
	require.Len(t, evs, 1)
	require.NotNil(t, evs[0].ShellExec, "answered with what it made")
	assert.True(t, evs[0].Again)
	assert.Zero(t, st.confirms, "Confirm was called")
}
