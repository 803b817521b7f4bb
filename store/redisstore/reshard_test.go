package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/acpnorm/acpnorm/internal/testredis"
	"github.com/acpnorm/acpnorm/store"
)

// reshardWriter feeds one session through a Store, commit after commit,
// the way the engine does: on a conflict or any other error it loads the
// session, finds whether its commit landed (the record n), and otherwise
// sends it again at the loaded version. After every commit and every load
// it checks the whole session against the commits that landed.
type reshardWriter struct {
	name    string
	s       *Store
	session string
	bare    bool // commits with no stream: the session has none

	attempts atomic.Int64 // commits and loads sent, answered or not
	acked    atomic.Int64 // the last commit acknowledged

	mu     sync.Mutex
	errs   map[string]int // errors seen, by kind
	faults []string       // what broke the store's promises
}

// reshardChange is commit i: record n = i, header i, "i;" appended to
// stream s<i%3>, and every 4th commit a new stream t<i> (a key that did
// not exist; during a migration Redis creates a new key on the target
// only), t<i-8> deleted, and a stream that never was deleted (as the
// engine deletes every stream a released call might have had).
func reshardChange(i int) *store.Change {
	c := &store.Change{
		Header:  []byte(strconv.Itoa(i)),
		Records: map[string][]byte{"n": []byte(strconv.Itoa(i))},
		Streams: []store.StreamOp{{Name: fmt.Sprintf("s%d", i%3), Data: []byte(strconv.Itoa(i) + ";"), Append: true}},
		TTL:     time.Hour,
	}
	if i%4 == 0 {
		c.Streams = append(c.Streams, store.StreamOp{Name: fmt.Sprintf("t%d", i), Data: []byte(strconv.Itoa(i))},
			store.StreamOp{Name: fmt.Sprintf("t%d", i-8), Delete: true}, store.StreamOp{Name: fmt.Sprintf("never%d", i), Delete: true})
	}
	return c
}

// reshardCheck compares snap with the state commits 1..n make (without
// their streams when bare), n being its record n; it returns n.
func reshardCheck(snap *store.Snapshot, bare bool) (int, error) {
	if snap.Version == 0 {
		return 0, nil
	}
	n, err := strconv.Atoi(string(snap.Records["n"]))
	if err != nil {
		return 0, fmt.Errorf("record n %q", snap.Records["n"])
	}
	want := map[string]string{}
	for i := 1; i <= n && !bare; i++ {
		want[fmt.Sprintf("s%d", i%3)] += strconv.Itoa(i) + ";"
		if i%4 == 0 && i > n-8 {
			want[fmt.Sprintf("t%d", i)] = strconv.Itoa(i)
		}
	}
	var diffs []string
	for name, w := range want {
		if g, ok := snap.Streams[name]; !ok {
			diffs = append(diffs, fmt.Sprintf("stream %s missing", name))
		} else if string(g) != w {
			diffs = append(diffs, fmt.Sprintf("stream %s is %s; want %s", name, short(string(g)), short(w)))
		}
	}
	for name := range snap.Streams {
		if _, ok := want[name]; !ok {
			diffs = append(diffs, fmt.Sprintf("stream %s is extra", name))
		}
	}
	if string(snap.Header) != strconv.Itoa(n) || len(snap.Records) != 1 {
		diffs = append(diffs, fmt.Sprintf("header %q, records %q", snap.Header, snap.Records))
	}
	if len(diffs) > 0 {
		slices.Sort(diffs)
		return n, fmt.Errorf("version %d, commits 1..%d: %s", snap.Version, n, strings.Join(diffs, "; "))
	}
	return n, nil
}

// short is s, or its ends when it is long.
func short(s string) string {
	if len(s) <= 40 {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:15]) + "..." + strconv.Quote(s[len(s)-15:])
}

func (w *reshardWriter) fault(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.faults) < 10 {
		w.faults = append(w.faults, fmt.Sprintf(w.name+": "+format, args...))
	}
}

// kind names an error for the tally, and reports whether it is one the
// caller is told to retry: a redirection Redis answered (the slot moving)
// or a commit not acknowledged by the replicas.
func kind(err error) (string, bool) {
	switch {
	case errors.Is(err, store.ErrConflict):
		return "conflict", true
	case errors.Is(err, ErrTooFewReplicas):
		return "too few replicas", true
	case errors.Is(err, store.ErrUnacknowledged):
		return "unacknowledged", true
	}
	for _, p := range []string{"TRYAGAIN", "ASK", "MOVED", "CLUSTERDOWN"} {
		if redis.HasErrorPrefix(errors.Unwrap(err), p) || strings.Contains(err.Error(), ": "+p+" ") {
			return p, true
		}
	}
	return err.Error(), false
}

func (w *reshardWriter) tally(what string, err error) {
	k, ok := kind(err)
	w.mu.Lock()
	w.errs[what+" "+k]++
	w.mu.Unlock()
	if !ok {
		w.fault("%s: %v (not an error the caller can tell to retry)", what, err)
	}
}

// load loads the session until it can, and checks it.
func (w *reshardWriter) load(ctx context.Context) (*store.Snapshot, int, bool) {
	for ctx.Err() == nil {
		w.attempts.Add(1)
		snap, err := w.s.Load(ctx, w.session)
		if err != nil {
			if ctx.Err() == nil {
				w.tally("load", err)
			}
			time.Sleep(5 * time.Millisecond)
			continue
		}
		n, err := reshardCheck(snap, w.bare)
		if err != nil {
			w.fault("load: %v", err)
		}
		if a := int(w.acked.Load()); n < a {
			w.fault("load: the session holds commits 1..%d; %d was acknowledged", n, a)
		}
		return snap, n, true
	}
	return nil, 0, false
}

// run commits until ctx ends.
func (w *reshardWriter) run(ctx context.Context) {
	v := uint64(0)
	for i := 1; ctx.Err() == nil; i++ {
		for ctx.Err() == nil {
			w.attempts.Add(1)
			c := reshardChange(i)
			if w.bare {
				c.Streams = nil
			}
			nv, err := w.s.Commit(ctx, w.session, v, c)
			if err == nil {
				if nv <= v {
					w.fault("commit %d: version %d after %d", i, nv, v)
				}
				v = nv
				w.acked.Store(int64(i))
				snap, n, ok := w.load(ctx)
				if ok && (snap.Version != v || n != i) {
					w.fault("commit %d acknowledged at version %d; load: version %d, commits 1..%d", i, v, snap.Version, n)
				}
				time.Sleep(time.Millisecond)
				break
			}
			if ctx.Err() != nil {
				return
			}
			w.tally("commit", err)
			snap, n, ok := w.load(ctx)
			if !ok {
				return
			}
			if n == i { // it landed, unacknowledged: go on from it
				if errors.Is(err, store.ErrConflict) {
					w.fault("commit %d answered a conflict, but it landed", i)
				}
				v = snap.Version
				break
			}
			if n != i-1 {
				w.fault("commit %d failed; the session holds commits 1..%d", i, n)
			}
			if snap.Version != v {
				w.fault("commit %d failed, landing nothing, yet the version went from %d to %d", i, v, snap.Version)
			}
			v = snap.Version
			time.Sleep(2 * time.Millisecond)
		}
	}
}

// A session's slot moves from one master to another (CLUSTER SETSLOT
// IMPORTING/MIGRATING, MIGRATE key by key, SETSLOT NODE) while three
// stores feed it (three prefixes, one session id: one slot): one waiting
// for a replica, one not, and one whose session has no stream. Commits go
// on before any key moved, with the session's keys split between the two
// masters in each order, with every key moved and the slot still
// importing, and after the move. Every commit either lands once or fails with an error the
// caller retries (a redirection, or not acknowledged by the replica);
// no acknowledged commit is lost; the versions only grow; every load,
// also during the move and from a new Store after it, holds exactly the
// commits that landed.
func TestClusterReshardLiveSession(t *testing.T) {
	cl := testredis.StartCluster(t, 3, 1, 5*time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const session = "reshard"
	writers := []*reshardWriter{
		{name: "wait 1", s: open(t, cl.URL, WithPrefix("w:"), WithWaitReplicas(1, 5*time.Second)), session: session, errs: map[string]int{}},
		{name: "wait 0", s: open(t, cl.URL, WithPrefix("n:")), session: session, errs: map[string]int{}},
		{name: "no stream", s: open(t, cl.URL, WithPrefix("b:")), session: session, errs: map[string]int{}, bare: true},
	}
	for _, w := range writers {
		defer w.s.Close()
	}

	// The slot, its master (source) and the other master (target).
	mv := cl.MoveSlot(t, writers[0].s.keys(session)[0])
	t.Logf("slot %d moves from %s to %s", mv.Slot, mv.From, mv.To)

	report := func() {
		for _, w := range writers {
			w.mu.Lock()
			t.Logf("%s: %d commits acknowledged, %d commits and loads sent; errors: %v", w.name, w.acked.Load(), w.attempts.Load(), w.errs)
			for _, f := range w.faults {
				t.Error(f)
			}
			w.faults = nil
			w.mu.Unlock()
		}
	}
	defer report()
	var wg sync.WaitGroup
	wctx, stop := context.WithCancel(ctx)
	for _, w := range writers {
		wg.Add(1)
		go func() { defer wg.Done(); w.run(wctx) }()
	}
	// progress lets every writer send a few more commits and loads, and
	// when commit is set, have two more commits acknowledged.
	progress := func(what string, commit bool) {
		t.Helper()
		count := func(w *reshardWriter) int64 {
			if commit {
				return w.acked.Load()
			}
			return w.attempts.Load()
		}
		need := int64(4)
		if commit {
			need = 2
		}
		start := make([]int64, len(writers))
		for i, w := range writers {
			start[i] = count(w)
		}
		deadline := time.Now().Add(15 * time.Second)
		for i, w := range writers {
			for count(w) < start[i]+need {
				if ctx.Err() != nil || time.Now().After(deadline) {
					t.Fatalf("%s: %s: %d in time; want %d (commit: %v)", what, w.name, count(w)-start[i], need, commit)
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
	progress("before the move", true)
	mv.Start()
	progress("slot migrating, no key moved", false)

	// Move the keys one at a time, in an order that splits the sessions
	// both ways: a stream first (the hash and name set still on the
	// source), then the hash (the hash and name set apart), then the name
	// set (hash and set on the target, streams still on the source), then
	// the rest. New streams appear on the target meanwhile.
	rank := func(k string) int {
		switch {
		case strings.HasSuffix(k, ":s0"):
			return 0
		case strings.HasSuffix(k, "}"):
			return 1
		case strings.HasSuffix(k, "}:k"):
			return 2
		}
		return 3
	}
	moved := 0
	for {
		keys := mv.Keys(1000)
		if len(keys) == 0 {
			break
		}
		slices.SortStableFunc(keys, func(a, b string) int { return rank(a) - rank(b) })
		k := keys[0]
		mv.Migrate(k) // BUSYKEY: the store wrote on the target a key the source still held
		moved++
		progress("after moving "+k, false)
	}
	t.Logf("%d keys moved one by one", moved)
	// The slot is still the source's: commits go there, are told ASK, and
	// follow it to the target.
	progress("every key moved, the slot still importing", true)
	mv.Finish()
	progress("after the move", true)
	stop()
	wg.Wait()

	for _, w := range writers {
		// A new Store (a replica that never saw the session) loads it all.
		fresh := open(t, cl.URL, WithPrefix(w.s.prefix))
		snap, err := fresh.Load(ctx, session)
		fresh.Close()
		require.NoError(t, err)
		n, err := reshardCheck(snap, w.bare)
		require.NoError(t, err, w.name)
		require.GreaterOrEqual(t, int64(n), w.acked.Load(), "%s: every acknowledged commit is there", w.name)
	}
	// Every key is on the target now.
	left, there := mv.Counts()
	require.Zero(t, left, "keys left on the source")
	require.NotZero(t, there, "keys on the target")
}

// While a session's slot is migrating and none of its keys has moved, its
// old master serves it whole: loads, commits (pushing every stream's
// expiry out or not) and deletes go through, whether or not the session
// has a stream named "". Its name set always lists "", a stream only
// while the hash has the field e: the scripts must not ask for the key of
// a stream "" that is not there, since Redis answers TRYAGAIN to a
// multi-key EXISTS naming a missing key of a migrating slot. The commit
// script applies that rule to the names its ops give (SMISMEMBER), and
// names() to the whole set (load, delete, and a commit that pushes the
// expiry out).
func TestClusterMigratingEmptyName(t *testing.T) {
	cl := testredis.StartCluster(t, 3, 0, 5*time.Second)
	ctx := t.Context()
	const session = "migrating"
	app := func(name, data string) store.StreamOp {
		return store.StreamOp{Name: name, Data: []byte(data), Append: true}
	}
	del := func(name string) store.StreamOp { return store.StreamOp{Name: name, Delete: true} }
	type run struct {
		s     *Store
		empty bool // the session has a stream ""
		v     uint64
	}
	var runs []*run
	for _, empty := range []bool{false, true} {
		s := open(t, cl.URL, WithPrefix(fmt.Sprintf("e%v:", empty)))
		defer s.Close()
		r := &run{s: s, empty: empty}
		ops := []store.StreamOp{app("s", "1")}
		if empty {
			ops = append(ops, app("", "1"))
		}
		var err error
		r.v, err = s.Commit(ctx, session, 0, &store.Change{Streams: ops, TTL: time.Hour})
		require.NoError(t, err)
		runs = append(runs, r)
	}
	mv := cl.MoveSlot(t, runs[0].s.keys(session)[0])
	mv.Start()
	defer mv.Finish()
	for _, r := range runs {
		what := fmt.Sprintf("stream \"\": %v", r.empty)
		wantStreams := func(s string) map[string][]byte {
			m := map[string][]byte{"s": []byte(s)}
			if r.empty {
				m[""] = []byte(s)
			}
			return m
		}
		snap, err := r.s.Load(ctx, session)
		require.NoError(t, err, what)
		require.Equal(t, wantStreams("1"), snap.Streams, what)

		// The same TTL: the streams' expiry is not pushed out, and the
		// commit's own ops are looked up in the name set.
		ops := []store.StreamOp{app("s", "2"), del("")}
		if r.empty {
			ops[1] = app("", "2")
		}
		r.v, err = r.s.Commit(ctx, session, r.v, &store.Change{Streams: ops, TTL: time.Hour})
		require.NoError(t, err, what)
		// A longer TTL pushes every stream out: the whole set is read.
		r.v, err = r.s.Commit(ctx, session, r.v, &store.Change{Streams: []store.StreamOp{app("s", "3")}, TTL: 3 * time.Hour})
		require.NoError(t, err, what)
		snap, err = r.s.Load(ctx, session)
		require.NoError(t, err, what)
		want := wantStreams("123")
		if r.empty {
			want[""] = []byte("12")
		}
		require.Equal(t, want, snap.Streams, what)
		require.Equal(t, r.v, snap.Version, what)

		require.NoError(t, r.s.Delete(ctx, session, r.v), what)
	}
	// (A Load now would be TRYAGAIN: a session that is not there is
	// refused for the whole move.)
	left, there := mv.Counts()
	require.Zero(t, left+there, "keys of the deleted sessions left on either master")
}
