package normalize_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/normalize"
	"github.com/acpnorm/acpnorm/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rollback is a store that keeps every version of each session, so that a
// test can take it back to an older one: what a Redis replica promoted
// while behind its master holds (the commits after that version are lost,
// and the numbers they had are given to new commits again). It keeps the
// store contract (compare-and-set on the version, atomic commits); expiry
// is not its concern.
type rollback struct {
	mu       sync.Mutex
	sessions map[string][]*store.Snapshot // every version, oldest first
}

func newRollback() *rollback { return &rollback{sessions: map[string][]*store.Snapshot{}} }

func copySnap(s *store.Snapshot) *store.Snapshot {
	c := &store.Snapshot{Version: s.Version, Header: append([]byte(nil), s.Header...), Records: map[string][]byte{}, Streams: map[string][]byte{}}
	for k, v := range s.Records {
		c.Records[k] = append([]byte{}, v...)
	}
	for k, v := range s.Streams {
		c.Streams[k] = append([]byte{}, v...)
	}
	return c
}

func (r *rollback) current(session string) *store.Snapshot {
	h := r.sessions[session]
	if len(h) == 0 {
		return &store.Snapshot{Records: map[string][]byte{}, Streams: map[string][]byte{}}
	}
	return h[len(h)-1]
}

func (r *rollback) Load(_ context.Context, session string) (*store.Snapshot, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return copySnap(r.current(session)), nil
}

func (r *rollback) Version(_ context.Context, session string) (uint64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.current(session).Version, nil
}

func (r *rollback) Commit(_ context.Context, session string, base uint64, c *store.Change) (uint64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.current(session)
	if cur.Version != base {
		return 0, store.ErrConflict
	}
	next := copySnap(cur)
	next.Version++
	if c.Header != nil {
		next.Header = append([]byte(nil), c.Header...)
	}
	for k, v := range c.Records {
		if v == nil {
			delete(next.Records, k)
		} else {
			next.Records[k] = append([]byte{}, v...)
		}
	}
	for _, op := range c.Streams {
		switch {
		case op.Delete:
			delete(next.Streams, op.Name)
		case op.Append:
			next.Streams[op.Name] = append(append([]byte{}, next.Streams[op.Name]...), op.Data...)
		default:
			next.Streams[op.Name] = append([]byte{}, op.Data...)
		}
	}
	r.sessions[session] = append(r.sessions[session], next)
	return next.Version, nil
}

func (r *rollback) Delete(_ context.Context, session string, base uint64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current(session).Version != base {
		return store.ErrConflict
	}
	delete(r.sessions, session)
	return nil
}

func (r *rollback) Close() error { return nil }

// back takes the session back to version v (0: it is gone), losing every
// commit after it; it returns the version it was at.
func (r *rollback) back(session string, v uint64) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.sessions[session]
	was := h[len(h)-1].Version
	r.sessions[session] = h[:v]
	return was
}

// client is what a client of the contract keeps of one session: each
// call's clientCall state and the highest revision it was handed.
type client struct {
	t     *testing.T
	held  map[string]uint32
	calls map[string]*clientCall
	// wentBack lists the revisions handed on at or below one held.
	wentBack []string
}

type clientCall struct {
	command, output, stdout, stderr string
	state                           normalize.State
	outcome                         normalize.Outcome
	exit                            string
}

func newClient(t *testing.T) *client {
	return &client{t: t, held: map[string]uint32{}, calls: map[string]*clientCall{}}
}

func (c *client) take(ev normalize.Event) {
	x := ev.ShellExec
	if x == nil || ev.Again {
		return
	}
	if x.Revision <= c.held[x.ToolCallID] {
		c.wentBack = append(c.wentBack, fmt.Sprintf("%s: revision %d after %d", x.ToolCallID, x.Revision, c.held[x.ToolCallID]))
		return
	}
	c.held[x.ToolCallID] = x.Revision
	f := c.calls[x.ToolCallID]
	if f == nil {
		f = &clientCall{}
		c.calls[x.ToolCallID] = f
	}
	if x.Command != "" {
		f.command = x.Command
	}
	f.output, f.stdout, f.stderr = x.Output.Apply(f.output), x.Stdout.Apply(f.stdout), x.Stderr.Apply(f.stderr)
	f.state, f.outcome = x.State, x.Outcome
	if x.ExitCode != nil {
		f.exit = fmt.Sprint(*x.ExitCode)
	}
}

func (c *client) finals() map[string]clientCall {
	m := map[string]clientCall{}
	for id, f := range c.calls {
		m[id] = *f
	}
	return m
}

// feed sends frame i (0-based) of fs, as sequence i+1, with what opts
// add, and folds what comes back; it returns the FrameErrors.
func (c *client) feed(n *normalize.Normalizer, fs [][]byte, i int, opts ...normalize.FeedOption) []*normalize.FrameError {
	c.t.Helper()
	var errs []*normalize.FrameError
	opts = append(opts, normalize.WithSequence(uint64(i+1)), normalize.WithSkipApplied(), normalize.WithEmit(func(ev normalize.Event) error {
		if ev.Error != nil {
			errs = append(errs, ev.Error)
		}
		c.take(ev)
		return nil
	}))
	_, err := n.Feed("S", fs[i], opts...)
	require.NoError(c.t, err)
	return errs
}

// lossCount counts Hooks.DataLoss.
type lossCount struct {
	mu sync.Mutex
	n  int
}

func (l *lossCount) hooks() normalize.Hooks {
	return normalize.Hooks{DataLoss: func() { l.mu.Lock(); l.n++; l.mu.Unlock() }}
}

func (l *lossCount) count() int { l.mu.Lock(); defer l.mu.Unlock(); return l.n }

// A store that loses commits (taken back to an older version, or losing
// the session whole) is found out by the next frame that says what the
// client holds: DATA_LOSS naming the calls, the frame not applied. The
// client then sends the session's frames again from the first, and sees
// no call go back: no revision at or below one it holds, above all no
// revision 1 of a call it has; and its finals equal one process's.
func TestStoreLossDetectedFromWhatTheClientHolds(t *testing.T) {
	fs := frames(recording)
	want := newClient(t)
	alone := normalize.New()
	for i := range fs {
		require.Empty(t, want.feed(alone, fs, i))
	}
	require.Empty(t, want.wentBack)

	for _, back := range []string{"half", "gone"} {
		t.Run(back, func(t *testing.T) {
			st := newRollback()
			var lost lossCount
			a := normalize.New(normalize.WithStore(st), normalize.WithHooks(lost.hooks()))
			b := normalize.New(normalize.WithStore(st), normalize.WithHooks(lost.hooks()))
			c := newClient(t)
			cut := 2 * len(fs) / 3
			for i := range cut {
				require.Empty(t, c.feed(a, fs, i))
			}
			// The master dies; the replica promoted in its place is
			// behind: half the commits, or none of the session.
			was := st.current("S").Version
			to := was / 2
			if back == "gone" {
				to = 0
			}
			st.back("S", to)
			held := maps.Clone(c.held)

			// The client goes on on another acpnormd, saying what it holds.
			errs := c.feed(b, fs, cut, normalize.WithHeld(held))
			require.Len(t, errs, 1)
			assert.Equal(t, normalize.DataLoss, errs[0].Code)
			assert.Contains(t, errs[0].Message, `session "S" lost state`)
			for id, n := range held {
				if st := c.calls[id].state; st != normalize.StateEnded || back == "gone" {
					assert.Contains(t, errs[0].Message, fmt.Sprintf("call %q: revision %d was handed on", id, n))
				}
			}
			assert.Equal(t, 1, lost.count(), "the loss is counted once")

			// It rebuilds the session from the first frame, on b.
			for i := range fs {
				for _, e := range c.feed(b, fs, i) {
					assert.Equal(t, normalize.AlreadyExists, e.Code, "frame %d: %s", i+1, e.Message)
				}
			}
			assert.Empty(t, c.wentBack, "no revision at or below one the client holds")
			assert.Equal(t, want.finals(), c.finals(), "the finals equal one process's")
			assert.Equal(t, 1, lost.count())

			// Said again, what the client holds is no loss now.
			c2 := newClient(t)
			errs = c2.feed(a, fs, len(fs)-1, normalize.WithHeld(c.held))
			for _, e := range errs {
				assert.NotEqual(t, normalize.DataLoss, e.Code, e.Message)
			}
		})
	}
}

// The acpnormd that served the session notices by itself: its cache is
// newer than what it loads after a conflict. With no word from the client,
// the frame is answered DATA_LOSS and no call's revisions go back.
func TestStoreLossDetectedByTheCache(t *testing.T) {
	fs := frames(recording)
	for _, tc := range []struct {
		name string
		opts []normalize.Option
		// meanwhile runs before the store goes back.
		meanwhile func(t *testing.T, a *normalize.Normalizer)
	}{
		{name: "cached"},
		{
			// A session the cache let go to make room for others (the
			// store keeps it) is checked, when it is loaded again, against
			// what the cache had handed on of it: no claim of the client's
			// is needed on the same stream.
			name: "let go from the cache",
			opts: []normalize.Option{normalize.WithMaxSessions(2)},
			meanwhile: func(t *testing.T, a *normalize.Normalizer) {
				for _, other := range []string{"O1", "O2", "O3"} {
					_, err := a.Feed(other, fs[0], normalize.WithSequence(1), normalize.WithSkipApplied())
					require.NoError(t, err)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newRollback()
			var lost lossCount
			a := normalize.New(append(tc.opts, normalize.WithStore(st), normalize.WithHooks(lost.hooks()))...)
			c := newClient(t)
			cut := 2 * len(fs) / 3
			for i := range cut {
				require.Empty(t, c.feed(a, fs, i))
			}
			if tc.meanwhile != nil {
				tc.meanwhile(t, a)
			}
			st.back("S", st.current("S").Version/2)
			errs := c.feed(a, fs, cut)
			require.Len(t, errs, 1)
			assert.Equal(t, normalize.DataLoss, errs[0].Code, errs[0].Message)
			assert.Equal(t, 1, lost.count())
			for i := range fs {
				c.feed(a, fs, i)
			}
			assert.Empty(t, c.wentBack)
		})
	}
}

// Without a store, a restarted process has lost every session: a client
// that says what it holds is told so, instead of seeing its calls start
// again at revision 1.
func TestRestartLossDetectedWithoutAStore(t *testing.T) {
	fs := frames(recording)
	c := newClient(t)
	first := normalize.New()
	cut := len(fs) / 2
	for i := range cut {
		require.Empty(t, c.feed(first, fs, i))
	}
	restarted := normalize.New()
	errs := c.feed(restarted, fs, cut, normalize.WithHeld(maps.Clone(c.held)))
	require.Len(t, errs, 1)
	assert.Equal(t, normalize.DataLoss, errs[0].Code)
	assert.Contains(t, errs[0].Message, "the session has none (the call is missing)")
	// There is no store to look into: the message says where the
	// session lived, and that a restart empties it.
	assert.Contains(t, errs[0].Message, `session "S" holds less than the client says was handed on`)
	assert.Contains(t, errs[0].Message, "no store")
	assert.Contains(t, errs[0].Message, "a restart empties")
	assert.NotContains(t, errs[0].Message, "in the store")
	for i := range fs {
		c.feed(restarted, fs, i)
	}
	assert.Empty(t, c.wentBack)
	want := newClient(t)
	alone := normalize.New()
	for i := range fs {
		want.feed(alone, fs, i)
	}
	assert.Equal(t, want.finals(), c.finals())
}

// A client whose state the session holds is no loss, and what it says
// changes nothing.
func TestHeldNoLoss(t *testing.T) {
	fs := frames(recording)
	st := store.NewMemory()
	a, b := normalize.New(normalize.WithStore(st)), normalize.New(normalize.WithStore(st))
	c := newClient(t)
	cut := len(fs) / 2
	for i := range cut {
		require.Empty(t, c.feed(a, fs, i))
	}
	require.NotEmpty(t, c.held)
	held := maps.Clone(c.held)
	for i := cut; i < len(fs); i++ {
		errs := c.feed(b, fs, i, normalize.WithHeld(held))
		require.Empty(t, errs, "frame %d", i+1)
	}
	assert.Empty(t, c.wentBack)

	// Closed, its calls are released: named in what a client holds, their
	// tombstones count as held.
	_, err := b.CloseSession("S", normalize.WithSequence(uint64(len(fs)+1)), normalize.WithSkipApplied())
	require.NoError(t, err)
	var errs []*normalize.FrameError
	_, err = a.Feed("S", fs[0], normalize.WithHeld(c.held), normalize.WithEmit(func(ev normalize.Event) error {
		if ev.Error != nil {
			errs = append(errs, ev.Error)
		}
		return nil
	}))
	require.NoError(t, err)
	assert.Empty(t, errs, "released calls are no loss")
}

// down is a rollback store that fails every operation while it is down,
// as a store whose master died does until a replica takes over.
type down struct {
	*rollback
	off atomic.Bool
}

var errMasterGone = errors.New("store: the master does not answer")

func (d *down) Load(ctx context.Context, s string) (*store.Snapshot, error) {
	if d.off.Load() {
		return nil, errMasterGone
	}
	return d.rollback.Load(ctx, s)
}

func (d *down) Version(ctx context.Context, s string) (uint64, error) {
	if d.off.Load() {
		return 0, errMasterGone
	}
	return d.rollback.Version(ctx, s)
}

func (d *down) Commit(ctx context.Context, s string, base uint64, c *store.Change) (uint64, error) {
	if d.off.Load() {
		return 0, errMasterGone
	}
	return d.rollback.Commit(ctx, s, base, c)
}

// The store fails (UNAVAILABLE: the session leaves the cache) and comes
// back older: the Normalizer remembers what it handed on and still finds
// the loss out, on the next frame that reaches the store.
func TestStoreLossAfterAnOutageIsDetected(t *testing.T) {
	fs := frames(recording)
	st := &down{rollback: newRollback()}
	a := normalize.New(normalize.WithStore(st))
	c := newClient(t)
	cut := 2 * len(fs) / 3
	for i := range cut {
		require.Empty(t, c.feed(a, fs, i))
	}
	st.off.Store(true)
	found := false
	for i := cut; i < len(fs) && !found; i++ {
		errs := c.feed(a, fs, i)
		if len(errs) == 0 {
			continue // a frame that needs no store
		}
		require.Equal(t, normalize.Unavailable, errs[0].Code, errs[0].Message)
		st.back("S", st.current("S").Version/2) // a replica behind takes over
		st.off.Store(false)
		errs = c.feed(a, fs, i)
		require.Len(t, errs, 1)
		assert.Equal(t, normalize.DataLoss, errs[0].Code, errs[0].Message)
		found = true
	}
	require.True(t, found)
	for i := range fs {
		c.feed(a, fs, i)
	}
	assert.Empty(t, c.wentBack)
}

// A long session's client names every call it holds, the released ones
// too (they count as held): more than a session can have at once (2 ×
// WithMaxCallsPerSession). Its frame is applied: the claim is checked for
// that many calls, the session's own first, then by id. Before, the frame
// was refused whole (INVALID_ARGUMENT, not applied), and a client that
// took that for an answer lost it. A loss still shows: in the session's
// own calls, however many others the claim names, and in a session that
// lost everything, whose DATA_LOSS says how many calls were not checked.
func TestHeldOfALongSession(t *testing.T) {
	now := time.Unix(1e9, 0)
	st := store.NewMemory()
	var lost lossCount
	opts := []normalize.Option{normalize.WithStore(st), normalize.WithMaxCallsPerSession(2), normalize.WithGrace(time.Second),
		normalize.WithClock(func() time.Time { return now }), normalize.WithHooks(lost.hooks())}
	a := normalize.New(opts...)
	var fs [][]byte
	for i := 1; i <= 7; i++ {
		id := fmt.Sprintf("c%d", i)
		fs = append(fs, nsOpen(id, "echo "+id), nsDelta(id, "out"+id),
			nsUpdate(`{"sessionUpdate":"tool_call_update","toolCallId":"`+id+`","status":"completed","_meta":{"terminal_exit":{"terminal_id":"`+id+`","exit_code":0}}}`))
	}
	c := newClient(t)
	for i := range 18 { // c1 to c6, each released (past its grace) by the next call's frames
		require.Empty(t, c.feed(a, fs, i), "frame %d", i+1)
		now = now.Add(2 * time.Second)
	}
	require.Len(t, c.held, 6)

	// Another Normalizer of the store takes the next frame, with the claim
	// of all six (more than 4): applied.
	b := normalize.New(opts...)
	require.Empty(t, c.feed(b, fs, 18, normalize.WithHeld(maps.Clone(c.held))))
	require.NotNil(t, c.calls["c7"])
	assert.Equal(t, "echo c7", c.calls["c7"].command)
	for i := 19; i < len(fs); i++ {
		require.Empty(t, c.feed(b, fs, i))
	}
	assert.Equal(t, "outc7", c.calls["c7"].output)
	assert.Equal(t, normalize.StateEnded, c.calls["c7"].state)
	assert.Zero(t, lost.count())

	// The session's own call, last by id, is checked first: a claim of a
	// revision it does not have is a loss.
	claim := maps.Clone(c.held)
	claim["c7"] = 9
	errs := newClient(t).feed(b, fs, len(fs)-1, normalize.WithHeld(claim))
	require.Len(t, errs, 1)
	assert.Equal(t, normalize.DataLoss, errs[0].Code)
	assert.Contains(t, errs[0].Message, `call "c7": revision 9 was handed on, the session has revision 3`)
	assert.Equal(t, 1, lost.count())

	// A process without the session (restarted, no store): the calls
	// checked show the loss, and the message says how many were not; the
	// rebuild, stating the same claim again, goes through.
	r := normalize.New(normalize.WithMaxCallsPerSession(2), normalize.WithGrace(time.Second), normalize.WithClock(func() time.Time { return now }))
	claim = maps.Clone(c.held)
	errs = c.feed(r, fs, len(fs)-1, normalize.WithHeld(claim))
	require.Len(t, errs, 1)
	assert.Equal(t, normalize.DataLoss, errs[0].Code)
	assert.Contains(t, errs[0].Message, "3 more calls the claim names were not checked (a claim is checked for at most 4 calls")
	for i := range fs {
		var opts []normalize.FeedOption
		if i == 0 {
			opts = append(opts, normalize.WithHeld(claim))
		}
		assert.Empty(t, c.feed(r, fs, i, opts...), "frame %d of the rebuild", i+1)
		now = now.Add(2 * time.Second)
		r.Sweep() // releases the ended calls past their grace
	}
	for i := 1; i <= 7; i++ {
		id := fmt.Sprintf("c%d", i)
		assert.Equal(t, clientCall{command: "echo " + id, output: "out" + id, state: normalize.StateEnded, outcome: normalize.Succeeded, exit: "0"}, *c.calls[id], id)
	}
}

// A revision above MaxHeldRevision is one no call gets to: claimed, the
// frame is refused (INVALID_ARGUMENT, not applied), and it is no loss,
// however many calls the claim names.
func TestHeldBeyondAnyRevisionIsRefused(t *testing.T) {
	var lost lossCount
	n := normalize.New(normalize.WithMaxCallsPerSession(2), normalize.WithHooks(lost.hooks()))
	c := newClient(t)
	fs := frames(recording)
	held := map[string]uint32{"a": 1, "b": 1, "c": 1, "d": 1, "e": normalize.MaxHeldRevision + 1}
	errs := c.feed(n, fs, 0, normalize.WithHeld(held))
	require.Len(t, errs, 1)
	assert.Equal(t, normalize.InvalidArgument, errs[0].Code)
	assert.Contains(t, errs[0].Message, `holds revision 2147483649 of call "e"`)
	assert.Zero(t, lost.count())
}

// A loss of more calls than the message names one by one still keeps a
// floor for every one of them.
func TestLossOfManyCalls(t *testing.T) {
	var fs [][]byte
	for i := range 20 {
		id := fmt.Sprintf("c%02d", i)
		fs = append(fs, nsOpen(id, "make"), nsDelta(id, "out\\n"))
	}
	st := newRollback()
	a := normalize.New(normalize.WithStore(st))
	c := newClient(t)
	for i := range fs {
		require.Empty(t, c.feed(a, fs, i))
	}
	st.back("S", 0)
	b := normalize.New(normalize.WithStore(st))
	extra := append(fs, nsDelta("c00", "more\\n"))
	errs := c.feed(b, extra, len(fs), normalize.WithHeld(maps.Clone(c.held)))
	require.Len(t, errs, 1)
	assert.Equal(t, normalize.DataLoss, errs[0].Code)
	assert.Contains(t, errs[0].Message, "and 4 more calls")
	for i := range extra {
		c.feed(b, extra, i)
	}
	assert.Empty(t, c.wentBack, "no call went back, the ones not named included")
	assert.Equal(t, "out\nmore\n", c.calls["c00"].output)
}

// Stored state that does not decode (here a call's record overwritten
// with junk) is deleted, and the session's next request is answered
// DATA_LOSS, once: the client sends its frames again from the first and
// ends with the same finals. Before, every request was refused as not
// applied (UNAVAILABLE), for ever, and the client retried without end.
func TestStoredStateThatDoesNotDecodeIsALoss(t *testing.T) {
	fs := frames(recording)
	st := store.NewMemory()
	var lost lossCount
	a := normalize.New(normalize.WithStore(st))
	c := newClient(t)
	cut := 2 * len(fs) / 3
	for i := range cut {
		require.Empty(t, c.feed(a, fs, i))
	}
	snap, err := st.Load(t.Context(), "S")
	require.NoError(t, err)
	junk := map[string][]byte{}
	for name := range snap.Records {
		if strings.HasPrefix(name, "c:") {
			junk[name] = []byte("junk")
			break
		}
	}
	require.NotEmpty(t, junk, "a call's record to spoil")
	_, err = st.Commit(t.Context(), "S", snap.Version, &store.Change{Records: junk, TTL: time.Hour})
	require.NoError(t, err)

	b := normalize.New(normalize.WithStore(st), normalize.WithHooks(lost.hooks()))
	errs := c.feed(b, fs, cut)
	require.Len(t, errs, 1)
	assert.Equal(t, normalize.DataLoss, errs[0].Code, errs[0].Message)
	assert.Contains(t, errs[0].Message, "did not decode")
	assert.Equal(t, 1, lost.count())
	// The rebuild, on a new stream whose first frame says what is held.
	// Nothing knows what was handed on of the deleted state, so that claim
	// is found lost too (and kept as the calls' floors): the client then
	// starts the rebuild once more, as it does after any DATA_LOSS.
	errs = c.feed(b, fs, 0, normalize.WithHeld(c.held))
	require.Len(t, errs, 1)
	assert.Equal(t, normalize.DataLoss, errs[0].Code, errs[0].Message)
	for i := range fs {
		var opts []normalize.FeedOption
		if i == 0 {
			opts = append(opts, normalize.WithHeld(c.held))
		}
		assert.Empty(t, c.feed(b, fs, i, opts...), "frame %d of the rebuild", i+1)
	}
	assert.Empty(t, c.wentBack)
	assert.Equal(t, 2, lost.count())
}
