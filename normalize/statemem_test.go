package normalize_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/normalize"
	"github.com/acpnorm/acpnorm/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What a session keeps besides its calls (the reject options of its
// unanswered permission asks, the commands and cwds of its client
// terminals and of the terminal/create requests awaiting their answer,
// its cwd) is text the client sent: it is charged to the memory budget
// like a call's, given back when it goes, and bounded.

// feedErrs feeds one frame of session sid and returns its FrameErrors.
func feedErrs(t *testing.T, n *normalize.Normalizer, sid, frame string, opts ...normalize.FeedOption) []*normalize.FrameError {
	t.Helper()
	var errs []*normalize.FrameError
	opts = append(opts, normalize.WithEmit(func(ev normalize.Event) error {
		if ev.Error != nil {
			errs = append(errs, ev.Error)
		}
		return nil
	}))
	_, err := n.Feed(sid, []byte(frame), opts...)
	require.NoError(t, err)
	return errs
}

func heldBy(t *testing.T, n *normalize.Normalizer, sid string) int {
	t.Helper()
	st, ok := n.SessionStats(sid)
	require.True(t, ok, "session %q", sid)
	return st.HeldBytes
}

func askWith(id int, call string, options ...string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/request_permission","params":{"sessionId":"S","toolCall":{"toolCallId":%q,"kind":"execute","title":"rm x","rawInput":{"command":"rm x"}},"options":[%s]}}`, id, call, strings.Join(options, ","))
}

func option(id, kind string) string {
	return fmt.Sprintf(`{"optionId":%q,"name":"n","kind":%q}`, id, kind)
}

func chose(id int, option string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"outcome":{"outcome":"selected","optionId":%q}}}`, id, option)
}

func messages(errs []*normalize.FrameError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "[%v] %s\n", e.Code, e.Message)
	}
	return b.String()
}

// An ask is read with at most 16 distinct reject options, and keeps those
// within the id limit; what it keeps is held text until its answer.
func TestAskRejectOptionsBoundedAndCharged(t *testing.T) {
	n := normalize.New()
	require.Empty(t, feedErrs(t, n, "s", tcOpen("c1", "rm x")))
	before := heldBy(t, n, "s")
	// Read: the long one and no00 to no14 (no03 again is the same
	// option); not read: no15 to no19.
	opts := []string{option("ok", "allow_once"), option(strings.Repeat("r", 300), "reject_once")}
	for i := range 20 {
		opts = append(opts, option(fmt.Sprintf("no%02d", i), "reject_always"))
		if i == 5 {
			opts = append(opts, option("no03", "reject_once"))
		}
	}
	errs := feedErrs(t, n, "s", askWith(5, "c1", opts...))
	require.Len(t, errs, 2, messages(errs))
	assert.Equal(t, normalize.InvalidArgument, errs[0].Code)
	assert.Contains(t, errs[0].Message, "--max-id-bytes")
	assert.Contains(t, errs[0].Message, "300 bytes")
	assert.Contains(t, errs[1].Message, "5 more reject options than the 16")
	assert.Equal(t, "c1", errs[1].ToolCallID)
	assert.Equal(t, before+15*4+len("5")+len("c1"), heldBy(t, n, "s"), "the 15 reject options kept are held, with the ask's id and its call's")

	// A kept reject is still read as one, and its answer gives the
	// bytes back.
	require.Empty(t, feedErrs(t, n, "s", chose(5, "no14")))
	assert.Equal(t, before, heldBy(t, n, "s"))
	execs, err := n.Feed("s", []byte(tcStatus("c1", "failed")))
	require.NoError(t, err)
	require.NotEmpty(t, execs)
	assert.Equal(t, normalize.Cancelled, execs[len(execs)-1].Outcome, "the user rejected it")

	// One not read is not.
	require.Empty(t, feedErrs(t, n, "s", tcOpen("c2", "rm y")))
	require.Len(t, feedErrs(t, n, "s", askWith(6, "c2", opts...)), 2)
	require.Empty(t, feedErrs(t, n, "s", chose(6, "no15")))
	execs, err = n.Feed("s", []byte(tcStatus("c2", "failed")))
	require.NoError(t, err)
	require.NotEmpty(t, execs)
	assert.Equal(t, normalize.Failed, execs[len(execs)-1].Outcome, "no15 was not read as a rejection")
}

// Asks past the session's memory share are not kept (their answers are
// not matched): what they hold stays within the share, and a close gives
// everything back.
func TestAskRejectOptionsWithinSessionMemory(t *testing.T) {
	n := normalize.New(normalize.WithMemoryBudget(1<<20), normalize.WithSessionMemory(8<<10))
	require.Empty(t, feedErrs(t, n, "s", tcOpen("c1", "rm x")))
	id := strings.Repeat("x", 250)
	var refused []*normalize.FrameError
	for i := range 150 {
		opts := []string{option("ok", "allow_once")}
		for j := range 16 {
			opts = append(opts, option(fmt.Sprintf("%s%03d%02d", id, i, j), "reject_once"))
		}
		refused = append(refused, feedErrs(t, n, "s", askWith(100+i, "c1", opts...))...)
		require.LessOrEqual(t, heldBy(t, n, "s"), 8<<10, "ask %d", i)
	}
	refusedThenFreed(t, n, refused)
}

// A terminal/create's command and cwd are held text from the request
// until the terminal is forgotten; past the session's share they are left
// out (the request is still awaited).
func TestTerminalRequestsCharged(t *testing.T) {
	n := normalize.New(normalize.WithMemoryBudget(1<<20), normalize.WithSessionMemory(16<<10))
	cmd, cwd := strings.Repeat("c", 1000), "/"+strings.Repeat("d", 999)
	create := fmt.Sprintf(`"command":%q,"cwd":%q`, cmd, cwd)
	require.Empty(t, feedErrs(t, n, "s", tcCreate(1, create)))
	base := heldBy(t, n, "s")
	require.Equal(t, 2000+len("1"), base, "an unanswered create holds its command, cwd and id")
	// Answered, the terminal keeps them, with its id for the request's;
	// an error answer gives them back.
	require.Empty(t, feedErrs(t, n, "s", tcResult(1, `{"terminalId":"t1"}`)))
	assert.Equal(t, 2000+len("t1"), heldBy(t, n, "s"))
	require.Empty(t, feedErrs(t, n, "s", tcCreate(2, create)))
	assert.Equal(t, 4000+len("t1")+len("2"), heldBy(t, n, "s"))
	require.Empty(t, feedErrs(t, n, "s", `{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"no"}}`))
	assert.Equal(t, 2000+len("t1"), heldBy(t, n, "s"))

	var refused []*normalize.FrameError
	for i := range 40 {
		refused = append(refused, feedErrs(t, n, "s", tcCreate(10+i, create))...)
		require.LessOrEqual(t, heldBy(t, n, "s"), 16<<10, "create %d", i)
	}
	refusedThenFreed(t, n, refused)
}

// A session's cwd (from session/new, or the frame's) is held text.
func TestSessionCwdCharged(t *testing.T) {
	n := normalize.New(normalize.WithMemoryBudget(64<<10), normalize.WithSessionMemory(16<<10))
	cwd := "/w/" + strings.Repeat("d", 997)
	newSession := func(id int, cwd string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, id, cwd)
	}
	require.Empty(t, feedErrs(t, n, "s", newSession(1, cwd)))
	assert.Equal(t, 1000, heldBy(t, n, "s"))
	require.Empty(t, feedErrs(t, n, "s", newSession(2, "/w")))
	assert.Equal(t, 2, heldBy(t, n, "s"), "a new cwd replaces the old one")
	require.Empty(t, feedErrs(t, n, "s", tcPrompt(3), normalize.WithCwd(cwd+"x")))
	assert.Equal(t, 1001, heldBy(t, n, "s"))

	// Many sessions, each with a long cwd, stay within the budget.
	var refused []*normalize.FrameError
	for i := range 100 {
		refused = append(refused, feedErrs(t, n, fmt.Sprintf("s%d", i), newSession(1, cwd+strings.Repeat("e", 8<<10)))...)
		require.LessOrEqual(t, n.Stats().HeldBytes, int64(64<<10), "session %d", i)
	}
	require.NotEmpty(t, refused)
	assert.Equal(t, normalize.ResourceExhausted, refused[0].Code)
	assert.Contains(t, refused[0].Message, "--memory-budget")
}

// A session loaded from a store holds what it held when stored.
func TestSessionStateChargedWhenLoaded(t *testing.T) {
	st := store.NewMemory()
	a, b := normalize.New(normalize.WithStore(st)), normalize.New(normalize.WithStore(st))
	frames := []string{
		`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w/app","mcpServers":[]}}`,
		tcOpen("c1", "rm x"),
		askWith(5, "c1", option("ok", "allow_once"), option("no", "reject_once")),
		tcCreate(6, `"command":"ls","cwd":"/w"`),
	}
	for i, f := range frames {
		require.Empty(t, feedErrs(t, a, "s", f, normalize.WithSequence(uint64(i+1))))
	}
	want := heldBy(t, a, "s")
	assert.Equal(t, want, heldBy(t, b, "s"))
	_, err := b.CloseSession("s", normalize.WithSequence(uint64(len(frames)+1)))
	require.NoError(t, err)
	assert.Zero(t, b.Stats().HeldBytes)
}

// With a store every commit writes the session's header, which carries
// its cwd, asks, terminal ids and client terminals: what they hold is bounded (4 ×
// WithTextLimit, at least 4 MiB), so a client cannot make every commit
// of its session rewrite a huge header.
func TestSessionStateBoundedForTheHeader(t *testing.T) {
	st := &keyOf{Store: store.NewMemory()}
	n := normalize.New(normalize.WithStore(st), normalize.WithTextLimit(64<<10), normalize.WithMemoryBudget(1<<30), normalize.WithSessionMemory(1<<30))
	cmd, cwd := strings.Repeat("c", 60<<10), "/"+strings.Repeat("d", 60<<10)
	create := fmt.Sprintf(`"command":%q,"cwd":%q`, cmd, cwd)
	var refused []*normalize.FrameError
	for i := range 50 { // 6 MB asked for
		refused = append(refused, feedErrs(t, n, "s", tcCreate(i+1, create), normalize.WithSequence(uint64(i+1)))...)
	}
	require.NotEmpty(t, refused)
	assert.Equal(t, normalize.ResourceExhausted, refused[0].Code)
	assert.Contains(t, refused[0].Message, "4 MiB")
	assert.LessOrEqual(t, heldBy(t, n, "s"), 4<<20)
	snap, err := st.Load(t.Context(), st.key)
	require.NoError(t, err)
	assert.Less(t, len(snap.Header), 4<<20+64<<10, "the stored header")
}

// refusedThenFreed checks that the session's share refused what refused
// names, and that closing session "s" gives every held byte back.
func refusedThenFreed(t *testing.T, n *normalize.Normalizer, refused []*normalize.FrameError) {
	t.Helper()
	require.NotEmpty(t, refused)
	assert.Equal(t, normalize.ResourceExhausted, refused[0].Code)
	assert.Contains(t, refused[0].Message, "--session-memory")
	_, err := n.CloseSession("s")
	require.NoError(t, err)
	assert.Zero(t, n.Stats().HeldBytes)
}

// The ids a session keeps besides its calls' (asks' JSON-RPC ids and
// calls, the terminal ids its calls showed, its client terminals' and
// terminal requests' ids) are held text too, and within the session_state
// bound: 4 × 4096 of them, two ids of 256 bytes each, were 8 MiB of
// memory (and, with a store, of every commit's header) nobody counted.
func TestSessionIDsCharged(t *testing.T) {
	n := normalize.New()
	long := func(prefix string, i int) string {
		s := fmt.Sprintf("%s%05d", prefix, i)
		return s + strings.Repeat("x", 250-len(s))
	}
	call := long("call", 0)
	require.Empty(t, feedErrs(t, n, "s", tcOpen(call, "ls")))
	calls := heldBy(t, n, "s")
	var refused []*normalize.FrameError
	feed := func(f string) {
		for _, e := range feedErrs(t, n, "s", f) {
			if e.Code == normalize.ResourceExhausted {
				refused = append(refused, e)
			}
		}
	}
	ids := 0
	for i := range 4096 {
		feed(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"session/request_permission","params":{"sessionId":"S","toolCall":{"toolCallId":%q},"options":[]}}`, long("ask", i), call))
		feed(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{"sessionUpdate":"tool_call_update","toolCallId":%q,"content":[{"type":"terminal","terminalId":%q}]}}}`, call, long("term", i)))
		feed(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"terminal/create","params":{"sessionId":"S"}}`, long("create", i)))
		feed(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"terminalId":%q}}`, long("create", i), long("client", i)))
		feed(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"terminal/create","params":{"sessionId":"S"}}`, long("await", i)))
		ids += 252 + 250 + 250 + 250 + 250 + 252
	}
	held := heldBy(t, n, "s") - calls
	t.Logf("%d bytes of ids sent, %d held, %d refusals", ids, held, len(refused))
	assert.Greater(t, held, 4<<20-4<<10, "the ids kept are held")
	assert.LessOrEqual(t, held, 4<<20+250, "within the session_state bound (and the call's terminal id)")
	require.NotEmpty(t, refused)
	assert.Contains(t, refused[0].Message, "--text-limit", "the session_state limit says which flag sets it")
	_, err := n.CloseSession("s")
	require.NoError(t, err)
	assert.Zero(t, n.Stats().HeldBytes)
}

// Feeding a permission ask of as many options as the message limit lets
// through (4 MiB of them here) allocates about what the ask keeps, not a
// list of its options, whose reject ids past the first 16 are counted.
func TestAskOfManyOptionsAllocatesWhatItKeeps(t *testing.T) {
	var opts []string
	size := 0
	for i := 0; size < 4<<20; i++ {
		o := option(fmt.Sprintf("o%d", i), "allow_once")
		if i%2 == 1 {
			o = option(fmt.Sprintf("r%d", i), "reject_once")
		}
		opts = append(opts, o)
		size += len(o) + 1
	}
	msg := []byte(askWith(5, "c1", opts...))
	n := normalize.New()
	require.Empty(t, feedErrs(t, n, "s", tcOpen("c1", "rm x")))
	require.Len(t, feedErrs(t, n, "s", askWith(4, "c1", opts[:40]...)), 1) // the first ask's reading, and its FrameError
	var errs []*normalize.FrameError
	emit := normalize.WithEmit(func(ev normalize.Event) error {
		if ev.Error != nil {
			errs = append(errs, ev.Error)
		}
		return nil
	})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := n.Feed("s", msg, emit)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("a frame of %d bytes, %d options: %d bytes allocated", len(msg), len(opts), allocated)
	assert.Less(t, allocated, uint64(64<<10))
	require.Len(t, errs, 1, messages(errs))
	assert.Equal(t, normalize.InvalidArgument, errs[0].Code, "more reject options than an ask reads are said")
}
