package normalize_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/acpnorm/acpnorm/normalize"
	"github.com/acpnorm/acpnorm/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// describe writes every field of an event, so that two event sequences
// compare equal only when a consumer could not tell them apart.
func describe(ev normalize.Event) string {
	if e := ev.Error; e != nil {
		return fmt.Sprintf("error %s %d %v %s %q", e.SessionID, e.Sequence, e.Code, e.ToolCallID, e.Message)
	}
	x := ev.ShellExec
	text := func(t *normalize.Text) string {
		if t == nil {
			return "-"
		}
		return fmt.Sprintf("%v:%q:%v:%d", t.Mode, t.Text, t.Truncated, t.TotalBytes)
	}
	exit := "nil"
	if x.ExitCode != nil {
		exit = fmt.Sprint(*x.ExitCode)
	}
	return fmt.Sprintf("exec %s #%d %s %q %q %q %q %v %v %s %q %v %s %s %s %q %v %v %q %d %q",
		x.ToolCallID, x.Revision, x.Dialect, x.AgentVersion, x.Command, x.Cwd, x.Description, x.State, x.Outcome, exit, x.Signal, x.TimedOut,
		text(x.Output), text(x.Stdout), text(x.Stderr), x.ApprovalReason, x.AwaitingApproval, x.Background, x.OutcomeReason, x.Sequence, x.TerminalID)
}

// play feeds the recording to the Normalizers in turn, frame i to
// replicas[i%len], closes the session on the last, and returns every event.
func play(t *testing.T, id string, replicas ...*normalize.Normalizer) []string {
	t.Helper()
	var out []string
	emit := normalize.WithEmit(func(ev normalize.Event) error {
		out = append(out, describe(ev))
		return nil
	})
	fs := frames(recording)
	for i, f := range fs {
		if _, err := replicas[i%len(replicas)].Feed(id, f, normalize.WithSequence(uint64(i+1)), emit); err != nil {
			t.Fatalf("frame %d: %v", i+1, err)
		}
	}
	if _, err := replicas[len(fs)%len(replicas)].CloseSession(id, normalize.WithSequence(uint64(len(fs)+1)), emit); err != nil {
		t.Fatal(err)
	}
	return out
}

// A session fed frame by frame through three Normalizers sharing a store
// gives, event for event, what one Normalizer alone gives: the dialect, the
// cwd, every call's accumulated output, its revision count and the asks
// all travel through the store.
func TestStoreReplicasMatchOneProcess(t *testing.T) {
	want := play(t, "s", normalize.New())
	st := store.NewMemory()
	var mu sync.Mutex
	ops := map[string]int{}
	hooks := normalize.WithHooks(normalize.Hooks{StoreOp: func(op, result string, took time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		ops[op+" "+result]++
	}})
	a, b, c := normalize.New(normalize.WithStore(st), hooks), normalize.New(normalize.WithStore(st), hooks), normalize.New(normalize.WithStore(st), hooks)
	got := play(t, "s", a, b, c)
	if g, w := strings.Join(got, "\n"), strings.Join(want, "\n"); g != w {
		t.Fatalf("through three replicas:\n%s\n\nalone:\n%s", g, w)
	}
	// Each replica's copy is stale on its every turn: the store's version
	// check catches it, on commit or by asking, and it loads the session.
	if ops["commit ok"] == 0 || ops["commit conflict"] == 0 || ops["load ok"] == 0 || ops["version conflict"] == 0 || ops["commit error"]+ops["load error"]+ops["version error"] != 0 {
		t.Errorf("store operations counted: %v", ops)
	}
	// The session was closed: what is left are the tombstones, on every
	// replica: a late update about a released call is refused, not reopened.
	late := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call_update","toolCallId":"` + firstCall(t, want) + `","status":"completed"}}}`)
	for i, n := range []*normalize.Normalizer{a, b, c} {
		execs, err := n.Feed("s", late)
		var fe *normalize.FrameError
		if len(execs) != 0 || !errors.As(err, &fe) || fe.Code != normalize.FailedPrecondition {
			t.Errorf("replica %d: a late frame about a closed session's call gave %v, %v", i, execs, err)
		}
	}
}

// firstCall is the tool call id of the first revision in events.
func firstCall(t *testing.T, events []string) string {
	for _, e := range events {
		if f := strings.Fields(e); f[0] == "exec" {
			return f[1]
		}
	}
	t.Fatal("no revision")
	return ""
}

// Frames of one session applied at the same time on two replicas are each
// applied exactly once: the store's version check makes the loser of every
// race load the winner's state and apply its frame again.
func TestStoreRacingReplicas(t *testing.T) {
	st := store.NewMemory()
	replicas := []*normalize.Normalizer{normalize.New(normalize.WithStore(st)), normalize.New(normalize.WithStore(st))}
	open := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","title":"seq 1 200","status":"in_progress","rawInput":{"command":"seq 1 200"}}}}`
	if _, err := replicas[0].Feed("s", []byte(open)); err != nil {
		t.Fatal(err)
	}
	const lines = 200
	var mu sync.Mutex
	revisions := map[uint32]int{}
	var wg sync.WaitGroup
	var next atomic.Int32
	for g := range 4 {
		wg.Go(func() {
			n := replicas[g%2]
			for {
				i := next.Add(1)
				if i > lines {
					return
				}
				delta := fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","_meta":{"terminal_output":{"terminal_id":"t1","data":"line %d\n"}}}}}`, i)
				execs, err := n.Feed("s", []byte(delta))
				// A frame that lost the race more often than the engine
				// retries is refused as not applied (UNAVAILABLE), and a
				// client sends it again: it must still land exactly once.
				var fe *normalize.FrameError
				for try := 0; try < 3 && errors.As(err, &fe) && fe.Code == normalize.Unavailable; try++ {
					execs, err = n.Feed("s", []byte(delta))
				}
				if err != nil {
					t.Errorf("delta %d: %v", i, err)
				}
				mu.Lock()
				for _, x := range execs {
					revisions[x.Revision]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	end := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","_meta":{"terminal_exit":{"terminal_id":"t1","exit_code":0}}}}}`
	execs, err := replicas[1].Feed("s", []byte(end))
	if err != nil || len(execs) != 1 {
		t.Fatalf("final: %v, %v", execs, err)
	}
	final := execs[0]
	for i := 1; i <= lines; i++ {
		if n := strings.Count(final.Output.Text, fmt.Sprintf("line %d\n", i)); n != 1 {
			t.Errorf("line %d is in the output %d times", i, n)
		}
	}
	if final.Revision != lines+2 {
		t.Errorf("final revision %d, want %d (1 opening, one per delta, the end)", final.Revision, lines+2)
	}
	for r := uint32(2); r <= lines+1; r++ {
		if revisions[r] != 1 {
			t.Errorf("revision %d was handed on %d times", r, revisions[r])
		}
	}
}

// flaky is a store that fails while broken is set.
type flaky struct {
	store.Store
	broken atomic.Bool
}

// errDown: the store could not be reached, so it knows nothing was
// applied.
var errDown = fmt.Errorf("%w: connection refused", store.ErrNotApplied)

func (f *flaky) Load(ctx context.Context, id string) (*store.Snapshot, error) {
	if f.broken.Load() {
		return nil, errDown
	}
	return f.Store.Load(ctx, id)
}

func (f *flaky) Version(ctx context.Context, id string) (uint64, error) {
	if f.broken.Load() {
		return 0, errDown
	}
	return f.Store.Version(ctx, id)
}

func (f *flaky) Commit(ctx context.Context, id string, base uint64, c *store.Change) (uint64, error) {
	if f.broken.Load() {
		return 0, errDown
	}
	return f.Store.Commit(ctx, id, base, c)
}

// A frame the store cannot take is not applied and says so (Unavailable);
// the session goes on from what the store holds once it is back, and the
// frame can be sent again.
func TestStoreUnavailable(t *testing.T) {
	fs := frames(recording)
	ref := play(t, "s", normalize.New())
	st := &flaky{Store: store.NewMemory()}
	n := normalize.New(normalize.WithStore(st))
	var got []string
	emit := normalize.WithEmit(func(ev normalize.Event) error {
		got = append(got, describe(ev))
		return nil
	})
	refused := 0
	for i, f := range fs {
		seq := normalize.WithSequence(uint64(i + 1))
		if i%3 == 1 {
			// With the store down, a frame is refused, or it is one that
			// changes nothing whatever the state (a chat message) and
			// needs no store.
			st.broken.Store(true)
			var down []string
			_, err := n.Feed("s", f, seq, normalize.WithEmit(func(ev normalize.Event) error {
				down = append(down, describe(ev))
				return nil
			}))
			st.broken.Store(false)
			if err != nil {
				t.Fatalf("frame %d with the store down: %v", i+1, err)
			}
			if len(down) == 0 {
				continue // applied without the store
			}
			if len(down) != 1 || !strings.Contains(down[0], "error s") || !strings.Contains(down[0], "Unavailable") ||
				!strings.Contains(down[0], "connection refused") || !strings.Contains(down[0], "not applied") {
				t.Fatalf("frame %d with the store down gave %q", i+1, down)
			}
			refused++
		}
		if _, err := n.Feed("s", f, seq, emit); err != nil {
			t.Fatalf("frame %d: %v", i+1, err)
		}
	}
	if refused < 5 {
		t.Fatalf("only %d frames were refused with the store down", refused)
	}
	if _, err := n.CloseSession("s", normalize.WithSequence(uint64(len(fs)+1)), emit); err != nil {
		t.Fatal(err)
	}
	if g, w := strings.Join(got, "\n"), strings.Join(ref, "\n"); g != w {
		t.Fatalf("with frames sent again after failures:\n%s\n\nalone:\n%s", g, w)
	}
}

// A session loaded after more than the TTL idle has its calls released,
// as the sweeper releases them without a store: a late frame about one is
// refused, and the session starts afresh.
func TestStoreIdleSessionReleased(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	st := store.NewMemory()
	a := normalize.New(normalize.WithStore(st), normalize.WithClock(clock), normalize.WithTTL(time.Minute))
	open := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","title":"sleep 1000","status":"in_progress","rawInput":{"command":"sleep 1000"}}}}`
	if _, err := a.Feed("s", []byte(open)); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Minute)
	b := normalize.New(normalize.WithStore(st), normalize.WithClock(clock), normalize.WithTTL(time.Minute))
	update := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed"}}}`
	execs, err := b.Feed("s", []byte(update))
	var fe *normalize.FrameError
	if len(execs) != 0 || !errors.As(err, &fe) || fe.Code != normalize.FailedPrecondition || !strings.Contains(fe.Message, "evicted after 1m idle") {
		t.Fatalf("a frame about a call of a session idle past the TTL: %v, %v", execs, err)
	}
	if s, ok := b.SessionStats("s"); !ok || s.Calls != 0 {
		t.Fatalf("the session after its release: %+v, %v", s, ok)
	}
}

// A text limit a stored call cannot hold is refused up front, naming it.
func TestStoreTextLimitChecked(t *testing.T) {
	err := normalize.Check(normalize.WithStore(store.NewMemory()), normalize.WithTextLimit(1<<30))
	if err == nil || !strings.Contains(err.Error(), "text limit 1073741824") {
		t.Fatalf("a 1 GiB text limit with a store: %v", err)
	}
	require.NoError(t, normalize.Check(normalize.WithTextLimit(1<<30)), "a 1 GiB text limit without a store")
}

// playBatches feeds the recording in batches of the sizes given (cycled),
// batch i to replicas[i%len], closes the session, and returns every event.
func playBatches(t *testing.T, id string, sizes []int, replicas ...*normalize.Normalizer) []string {
	t.Helper()
	var out []string
	emit := normalize.WithEmit(func(ev normalize.Event) error {
		out = append(out, describe(ev))
		return nil
	})
	fs := frames(recording)
	b := 0
	for i := 0; i < len(fs); b++ {
		n := min(sizes[b%len(sizes)], len(fs)-i)
		batch := make([]normalize.Frame, n)
		for j := range batch {
			batch[j] = normalize.Frame{Message: fs[i+j], Sequence: uint64(i + j + 1)}
		}
		if _, err := replicas[b%len(replicas)].FeedBatch(id, batch, emit); err != nil {
			t.Fatalf("frames %d to %d: %v", i+1, i+n, err)
		}
		i += n
	}
	if _, err := replicas[0].CloseSession(id, normalize.WithSequence(uint64(len(fs)+1)), emit); err != nil {
		t.Fatal(err)
	}
	return out
}

// Frames fed in batches give, event for event, what feeding them one by
// one gives: without a store, and through two replicas sharing one, with
// one commit per batch.
func TestFeedBatchMatchesFeed(t *testing.T) {
	want := strings.Join(play(t, "s", normalize.New()), "\n")
	for _, sizes := range [][]int{{1}, {2}, {3, 1, 7}, {45}} {
		if got := strings.Join(playBatches(t, "s", sizes, normalize.New()), "\n"); got != want {
			t.Errorf("batches of %v without a store:\n%s\n\none by one:\n%s", sizes, got, want)
		}
		st := store.NewMemory()
		commits := 0
		hooks := normalize.WithHooks(normalize.Hooks{StoreOp: func(op, result string, took time.Duration) {
			if op == "commit" && result == "ok" {
				commits++
			}
		}})
		a, b := normalize.New(normalize.WithStore(st), hooks), normalize.New(normalize.WithStore(st), hooks)
		if got := strings.Join(playBatches(t, "s", sizes, a, b), "\n"); got != want {
			t.Errorf("batches of %v through two replicas:\n%s\n\none by one:\n%s", sizes, got, want)
		}
		if sizes[0] == 45 && commits != 2 { // the batch, and the close
			t.Errorf("one batch of every frame made %d commits", commits)
		}
	}
}

// A batch the store cannot take is not applied at all, and its
// FrameErrors, the first for its first frame, say which frames to send
// again.
func TestFeedBatchStoreUnavailable(t *testing.T) {
	st := &flaky{Store: store.NewMemory()}
	n := normalize.New(normalize.WithStore(st))
	fs := frames(recording)
	batch := func(from, to int) []normalize.Frame {
		var b []normalize.Frame
		for i := from; i < to; i++ {
			b = append(b, normalize.Frame{Message: fs[i], Sequence: uint64(i + 1)})
		}
		return b
	}
	if _, err := n.FeedBatch("s", batch(0, 10)); err != nil {
		t.Fatal(err)
	}
	st.broken.Store(true)
	execs, err := n.FeedBatch("s", batch(10, 20))
	st.broken.Store(false)
	var fe *normalize.FrameError
	if len(execs) != 0 || !errors.As(err, &fe) || fe.Code != normalize.Unavailable || fe.Sequence != 11 || !strings.Contains(fe.Message, "frames 11 to 20") {
		t.Fatalf("a batch with the store down: %v, %v", execs, err)
	}
	// Sent again, the batch gives what it gives when fed once.
	events := func(n *normalize.Normalizer, b []normalize.Frame) string {
		var out []string
		if _, err := n.FeedBatch("s", b, normalize.WithEmit(func(ev normalize.Event) error {
			out = append(out, describe(ev))
			return nil
		})); err != nil {
			t.Fatal(err)
		}
		return strings.Join(out, "\n")
	}
	ref := normalize.New()
	events(ref, batch(0, 10))
	want := events(ref, batch(10, 20))
	if got := events(n, batch(10, 20)); got != want || want == "" {
		t.Fatalf("the batch sent again:\n%s\n\nfed once:\n%s", got, want)
	}
}

// loadFailsOnce is a store whose next Load fails once armed: a master
// dying while a replica that did not cache the session loads it, the
// store answering again a moment later.
type loadFailsOnce struct {
	store.Store
	armed atomic.Bool
}

func (l *loadFailsOnce) Load(ctx context.Context, id string) (*store.Snapshot, error) {
	if l.armed.CompareAndSwap(true, false) {
		return nil, errDown
	}
	return l.Store.Load(ctx, id)
}

// A batch whose session cannot be loaded is not applied at all, not even
// its later frames once the store answers again: applied after the first
// was refused, they would make the session's applied sequence pass it,
// and the first, sent again, would be skipped as applied. The chaos suite
// found it: a session's initialize result refused so, the frames after it
// applied, and the session read with the generic dialect.
func TestFeedBatchLoadFailsOnce(t *testing.T) {
	fs := frames(recording)
	batch := func(from, to int) []normalize.Frame {
		var b []normalize.Frame
		for i := from; i < to; i++ {
			b = append(b, normalize.Frame{Message: fs[i], Sequence: uint64(i + 1)})
		}
		return b
	}
	events := func(n *normalize.Normalizer, b []normalize.Frame) ([]string, error) {
		var out []string
		_, err := n.FeedBatch("s", b, normalize.WithSkipApplied(), normalize.WithEmit(func(ev normalize.Event) error {
			out = append(out, describe(ev))
			return nil
		}))
		return out, err
	}
	ref := normalize.New()
	_, err := events(ref, batch(0, 5))
	require.NoError(t, err)
	want, err := events(ref, batch(5, 13))
	require.NoError(t, err)
	require.NotEmpty(t, want)

	st := &loadFailsOnce{Store: store.NewMemory()}
	a, b := normalize.New(normalize.WithStore(st)), normalize.New(normalize.WithStore(st))
	_, err = events(a, batch(0, 5))
	require.NoError(t, err)
	st.armed.Store(true) // b has not cached the session: it loads it
	got, err := events(b, batch(5, 13))
	require.NoError(t, err)
	require.Len(t, got, 8, "a FrameError for each frame, nothing else: %v", got)
	for i, e := range got {
		assert.Contains(t, e, fmt.Sprintf("error s %d Unavailable", 6+i))
		assert.Contains(t, e, "batch of frames 6 to 13")
	}

	// Sent again, the batch gives what it gives when fed once.
	got, err = events(b, batch(5, 13))
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

// With WithSkipApplied, frames sent again (to the same Normalizer, or to
// another one sharing the store) are skipped with AlreadyExists, and the
// session goes on exactly as if they had been sent once.
func TestSkipApplied(t *testing.T) {
	want := strings.Join(play(t, "s", normalize.New()), "\n")
	fs := frames(recording)
	st := store.NewMemory()
	for name, replicas := range map[string][]*normalize.Normalizer{
		"alone":        {normalize.New()},
		"across store": {normalize.New(normalize.WithStore(st)), normalize.New(normalize.WithStore(st))},
	} {
		t.Run(name, func(t *testing.T) {
			var got []string
			skipped, again := 0, map[uint64]bool{}
			first := map[uint64][]string{} // by frame: what it made the first time
			var repeated []string
			emit := normalize.WithEmit(func(ev normalize.Event) error {
				if ev.Again { // with a store: what the frame sent again made
					again[ev.ShellExec.Sequence] = true
					repeated = append(repeated, describe(ev))
					return nil
				}
				if ev.ShellExec != nil {
					first[ev.ShellExec.Sequence] = append(first[ev.ShellExec.Sequence], describe(ev))
				}
				if ev.Error != nil && ev.Error.Code == normalize.AlreadyExists {
					skipped++
					if !strings.Contains(ev.Error.Message, "was applied before") {
						t.Errorf("skip message %q", ev.Error.Message)
					}
					return nil
				}
				got = append(got, describe(ev))
				return nil
			})
			feed := func(n *normalize.Normalizer, i int) {
				if _, err := n.Feed("s", fs[i], normalize.WithSequence(uint64(i+1)), normalize.WithSkipApplied(), emit); err != nil {
					t.Fatalf("frame %d: %v", i+1, err)
				}
			}
			half := len(fs) / 2
			for i := range half {
				feed(replicas[0], i)
			}
			// The client lost its stream: it sends the last ten again,
			// to the other replica, then goes on there.
			other := replicas[len(replicas)-1]
			for i := half - 10; i < len(fs); i++ {
				feed(other, i)
			}
			switch {
			case name == "alone" && (skipped != 10 || len(again) > 0):
				t.Errorf("without a store: %d frames skipped and %d answered again, want 10 skipped", skipped, len(again))
			case name != "alone" && (skipped != 0 || len(again) == 0):
				t.Errorf("with a store: %d frames skipped and %d answered again, want every one answered as it was", skipped, len(again))
			}
			var made []string
			for i := half - 10; i < half; i++ {
				made = append(made, first[uint64(i+1)]...)
			}
			if name != "alone" && strings.Join(made, "\n") != strings.Join(repeated, "\n") {
				t.Errorf("the frames sent again are answered with:\n%s\n\nthey made:\n%s", strings.Join(repeated, "\n"), strings.Join(made, "\n"))
			}
			if _, err := other.CloseSession("s", normalize.WithSequence(uint64(len(fs)+1)), normalize.WithSkipApplied(), emit); err != nil {
				t.Fatal(err)
			}
			if g := strings.Join(got, "\n"); g != want {
				t.Fatalf("with frames sent again:\n%s\n\nsent once:\n%s", g, want)
			}
		})
	}
}

// Without WithSkipApplied, or with sequence 0, nothing is skipped.
func TestSkipAppliedOnlyWhenAsked(t *testing.T) {
	fs := frames(recording)
	n := normalize.New()
	for i := range 12 {
		if _, err := n.Feed("s", fs[i], normalize.WithSequence(uint64(i+1)), normalize.WithSkipApplied()); err != nil {
			t.Fatal(err)
		}
	}
	for _, opts := range [][]normalize.FeedOption{{normalize.WithSequence(3)}, {normalize.WithSequence(0), normalize.WithSkipApplied()}} {
		if _, err := n.Feed("s", fs[11], opts...); err != nil {
			t.Errorf("a frame sent again %v: %v", opts, err)
		}
	}
}

// A session the store holds in a form this build cannot read is deleted
// and its frame answered DataLoss, naming the problem, so that the client
// sends it again from the first; nothing of it is counted as held, and the
// other sessions go on.
func TestStoreCorruptSession(t *testing.T) {
	st := store.NewMemory()
	n := normalize.New(normalize.WithStore(st))
	fs := frames(recording)
	for i := range 8 {
		if _, err := n.Feed("good", fs[i]); err != nil {
			t.Fatal(err)
		}
	}
	// Another writer leaves a session with a good header but a call
	// record this build cannot read.
	snap, err := st.Load(context.Background(), "good")
	if err != nil || snap.Version == 0 {
		t.Fatal(snap, err)
	}
	recs := map[string][]byte{}
	for k, v := range snap.Records {
		recs[k] = v
	}
	recs["c:zz"] = []byte{1, 2, 3}
	if _, err := st.Commit(context.Background(), "bad", 0, &store.Change{Header: snap.Header, Records: recs, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	// The state that does not decode is deleted and the frame answered
	// DATA_LOSS (the client sends the session again from the first), not
	// refused as not applied for ever.
	execs, err := n.Feed("bad", fs[8])
	var fe *normalize.FrameError
	if len(execs) != 0 || !errors.As(err, &fe) || fe.Code != normalize.DataLoss || !strings.Contains(fe.Message, "corrupt") {
		t.Fatalf("a frame of a corrupt session: %v, %v", execs, err)
	}
	if snap, err := st.Load(context.Background(), "bad"); err != nil || len(snap.Records) != 0 {
		t.Fatalf("the corrupt session is still stored: %+v, %v", snap, err)
	}
	if s := n.Stats(); s.Calls != 1 {
		t.Fatalf("after dropping the corrupt session: %+v (want the good session's one call)", s)
	}
	for i := range 9 { // sent again from the first: a session like the good one
		if _, err := n.Feed("bad", fs[i]); err != nil {
			t.Fatalf("frame %d of the rebuild: %v", i+1, err)
		}
	}
	if _, err := n.Feed("good", fs[8]); err != nil {
		t.Fatal(err)
	}
}

// A frame that changes nothing commits nothing, also when the session
// tracks several terminals (whose encoding must not depend on map order).
func TestStoreNoChangeNoCommit(t *testing.T) {
	commits := 0
	n := normalize.New(normalize.WithStore(store.NewMemory()), normalize.WithHooks(normalize.Hooks{StoreOp: func(op, result string, took time.Duration) {
		if op == "commit" {
			commits++
		}
	}}))
	named := `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"some-agent"}}}`
	if _, err := n.Feed("s", []byte(named), normalize.WithDialect("auto")); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		open := fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call","toolCallId":"c%d","kind":"execute","title":"sleep 9","status":"in_progress","rawInput":{"command":"sleep 9"},"_meta":{"terminal_info":{"terminal_id":"t%d"}}}}}`, i, i)
		if _, err := n.Feed("s", []byte(open)); err != nil {
			t.Fatal(err)
		}
	}
	if s, _ := n.SessionStats("s"); s.Terminals != 6 {
		t.Fatalf("terminals tracked: %d", s.Terminals)
	}
	before := commits
	chat := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}`)
	for range 20 {
		if _, err := n.Feed("s", chat); err != nil {
			t.Fatal(err)
		}
	}
	if commits != before {
		t.Fatalf("20 chat messages made %d commits", commits-before)
	}
}

// With a store the sweeper releases ended calls past their grace period
// with a commit, so a late frame about one is refused on every replica,
// and it drops idle sessions from the cache only: the store keeps them.
func TestStoreSweep(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := normalize.WithClock(func() time.Time { return now })
	st := store.NewMemory()
	a := normalize.New(normalize.WithStore(st), clock, normalize.WithTTL(time.Hour), normalize.WithGrace(time.Minute))
	b := normalize.New(normalize.WithStore(st), clock, normalize.WithTTL(time.Hour), normalize.WithGrace(time.Minute))
	open := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","title":"true","status":"in_progress","rawInput":{"command":"true"}}}}`
	end := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","_meta":{"terminal_exit":{"terminal_id":"t1","exit_code":0}}}}}`
	for _, f := range []string{open, end} {
		if _, err := a.Feed("s", []byte(f)); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(2 * time.Minute)
	a.Sweep()
	if s, _ := a.SessionStats("s"); s.Calls != 0 {
		t.Fatalf("after the grace period and a sweep, replica A holds %d calls", s.Calls)
	}
	late := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed"}}}`
	_, err := b.Feed("s", []byte(late))
	var fe *normalize.FrameError
	if !errors.As(err, &fe) || fe.Code != normalize.FailedPrecondition || !strings.Contains(fe.Message, "grace") {
		t.Fatalf("a late frame on replica B: %v", err)
	}
	// Idle past the TTL: the sweeper drops the session from A's cache
	// without touching the store.
	now = now.Add(2 * time.Hour)
	a.Sweep()
	if held := a.Stats(); held.Sessions != 0 {
		t.Fatalf("after the TTL, replica A caches %d sessions", held.Sessions)
	}
	if v, err := st.Version(context.Background(), "s"); err != nil || v == 0 {
		t.Fatalf("the store after A's sweep: version %d, %v", v, err)
	}
}

// With a store, the session limit bounds the cache: sessions beyond it
// leave the cache and come back from the store, and nothing is refused or
// lost.
func TestStoreCacheEvicts(t *testing.T) {
	fs := frames(recording)
	ids := []string{"s0", "s1", "s2", "s3", "s4"}
	feedAll := func(n *normalize.Normalizer) map[string][]string {
		out := map[string][]string{}
		for i, f := range fs { // the sessions interleaved, frame by frame
			for _, id := range ids {
				execs, err := n.Feed(id, f, normalize.WithSequence(uint64(i+1)))
				if err != nil {
					t.Fatalf("%s frame %d: %v", id, i+1, err)
				}
				for _, x := range execs {
					out[id] = append(out[id], describe(normalize.Event{ShellExec: x}))
				}
			}
		}
		return out
	}
	want := feedAll(normalize.New())
	n := normalize.New(normalize.WithStore(store.NewMemory()), normalize.WithMaxSessions(2))
	got := feedAll(n)
	for _, id := range ids {
		if g, w := strings.Join(got[id], "\n"), strings.Join(want[id], "\n"); g != w || w == "" {
			t.Errorf("session %s through a cache of 2:\n%s\n\nwithout a store:\n%s", id, g, w)
		}
	}
	if s := n.Stats(); s.Sessions > 2 {
		t.Errorf("%d sessions cached, over the limit of 2", s.Sessions)
	}
}

// A session stored in a format later than this build's (a newer build
// shares the store during a rolling upgrade) is not corrupt: it is left as
// it is, and its frame is refused as not applied (Unavailable), naming the
// problem, so that it can be sent again to a replica that reads it.
// Nothing of it is lost: once the state is in this build's format again,
// the same frame is applied as if nothing had happened.
func TestStoreNewerFormat(t *testing.T) {
	fs := frames(recording)
	ctx := context.Background()
	// What the ninth frame makes in a session nothing interrupted.
	ref := normalize.New(normalize.WithStore(store.NewMemory()))
	for i := range 8 {
		_, err := ref.Feed("s", fs[i])
		require.NoError(t, err)
	}
	want, err := ref.Feed("s", fs[8])
	require.NoError(t, err)
	require.NotEmpty(t, want, "the ninth frame makes a revision")

	// later returns rec with the byte at i one above this build's.
	later := func(rec []byte, i int) []byte {
		b := append([]byte(nil), rec...)
		b[i]++
		return b
	}
	// stateAt is where a call record's call state starts: after the
	// entry's format byte, order, end time, revisions and outcome.
	stateAt := func(rec []byte) int {
		i := 1
		_, n := binary.Uvarint(rec[i:])
		i += n
		_, n = binary.Varint(rec[i:])
		i += n
		_, n = binary.Uvarint(rec[i:])
		return i + n + 1
	}
	for _, tc := range []struct {
		name   string
		change func(snap *store.Snapshot) *store.Change
	}{
		{"session header", func(snap *store.Snapshot) *store.Change {
			return &store.Change{Header: later(snap.Header, 0)}
		}},
		{"call record", func(snap *store.Snapshot) *store.Change {
			c := &store.Change{Records: map[string][]byte{}}
			for k, v := range snap.Records {
				if strings.HasPrefix(k, "c:") {
					c.Records[k] = later(v, 0)
				}
			}
			return c
		}},
		{"call state", func(snap *store.Snapshot) *store.Change {
			// A call state is written in the earliest format that holds
			// it, which may be behind the latest this build reads.
			c := &store.Change{Records: map[string][]byte{}}
			for k, v := range snap.Records {
				if strings.HasPrefix(k, "c:") {
					b := append([]byte(nil), v...)
					b[stateAt(v)] = accum.StateVersion + 1
					c.Records[k] = b
				}
			}
			return c
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := store.NewMemory()
			a := normalize.New(normalize.WithStore(st))
			for i := range 8 {
				_, err := a.Feed("s", fs[i])
				require.NoError(t, err)
			}
			orig, err := st.Load(ctx, "s")
			require.NoError(t, err)
			ch := tc.change(orig)
			require.True(t, ch.Header != nil || len(ch.Records) > 0, "nothing to change")
			ch.TTL = time.Hour
			v, err := st.Commit(ctx, "s", orig.Version, ch)
			require.NoError(t, err)

			// Another replica of this build meets the newer state.
			b := normalize.New(normalize.WithStore(st))
			execs, err := b.Feed("s", fs[8])
			var fe *normalize.FrameError
			require.ErrorAs(t, err, &fe)
			assert.Empty(t, execs)
			assert.Equal(t, normalize.Unavailable, fe.Code, "%s", fe.Message)
			assert.Contains(t, fe.Message, "newer build")
			kept, err := st.Load(ctx, "s")
			require.NoError(t, err)
			assert.Equal(t, v, kept.Version, "the newer state was changed")
			assert.Len(t, kept.Records, len(orig.Records), "records of the newer state were lost")

			// The newer build's state read by it again: put back as it was.
			back := &store.Change{Header: orig.Header, Records: map[string][]byte{}, TTL: time.Hour}
			for k := range ch.Records {
				back.Records[k] = orig.Records[k]
			}
			_, err = st.Commit(ctx, "s", v, back)
			require.NoError(t, err)
			got, err := b.Feed("s", fs[8])
			require.NoError(t, err)
			require.Equal(t, len(want), len(got))
			for i := range want {
				assert.Equal(t, describe(normalize.Event{ShellExec: want[i]}), describe(normalize.Event{ShellExec: got[i]}))
			}
		})
	}
}
