package accum

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/internal/wire"
)

// callOp is one step of a call's life as the engine drives it: an
// observation, an end, an answer to a permission ask or a cancel of the
// turn, then (unless noRev) the revision it gives.
type callOp struct {
	obs          *Observation
	end          bool
	endCancelled bool
	answer       int8 // 1: accepted, 2: rejected
	cancelReq    bool
	whole        bool // the revision is made whole (Call.Whole), for a new client
	noRev        bool
}

func obsOp(o Observation) callOp { return callOp{obs: &o} }

func textsOp(ts ...Text) callOp { return obsOp(Observation{Texts: ts}) }

func endOp(cancelled bool) callOp { return callOp{end: true, endCancelled: cancelled} }

// stepResult is everything a step shows of the call.
type stepResult struct {
	Rev      Revision
	OK       bool
	Size     int
	Ended    bool
	Shell    bool
	NotShell bool
	Command  string
}

func runOp(c *Call, op callOp) stepResult {
	switch {
	case op.obs != nil:
		o := *op.obs
		c.Apply(&o)
	case op.end:
		c.End(op.endCancelled, "the turn ended")
	case op.answer != 0:
		c.Answer(op.answer == 2)
	case op.cancelReq:
		c.CancelRequested()
	}
	var res stepResult
	if !op.noRev {
		res.Rev, res.OK = c.Revision()
		if res.OK && op.whole {
			c.Whole(&res.Rev)
		}
	}
	res.Size, res.Ended, res.Shell, res.NotShell, res.Command = c.Size(), c.Ended(), c.IsShell(), c.NotShell(), c.Command()
	return res
}

// simStore is what a store holds of a call's streams.
type simStore [NumStreams][]byte

func (st *simStore) apply(syncs [NumStreams]Sync) {
	for s, y := range syncs {
		switch {
		case !y.Changed:
			if y.Replace || y.Data != nil {
				panic(fmt.Sprintf("stream %d: unchanged sync %+v", s, y))
			}
		case y.Replace:
			st[s] = append([]byte(nil), y.Data...)
		default:
			st[s] = append(st[s], y.Data...)
		}
	}
}

// saveCall stores c: its state and its syncs, in either order.
func saveCall(t *testing.T, c *Call, st *simStore, syncFirst bool) []byte {
	t.Helper()
	var state []byte
	if syncFirst {
		st.apply(c.TakeSync())
		state = c.AppendState(nil)
	} else {
		state = c.AppendState(nil)
		st.apply(c.TakeSync())
	}
	for s, b := range c.streams {
		if b == nil {
			if len(st[s]) > 0 {
				t.Fatalf("stream %d: stored %q for a stream the call does not have", s, st[s])
			}
			continue
		}
		if len(st[s]) > 2*b.limit {
			t.Fatalf("stream %d: %d bytes stored, over twice the limit of %d", s, len(st[s]), b.limit)
		}
		if !bytes.HasSuffix(st[s], b.held()) {
			t.Fatalf("stream %d: stored %q does not end with the held %q", s, st[s], b.held())
		}
	}
	return state
}

// restoreCall restores c from what saveCall stored and checks that the
// restored call is the same as far as can be seen without using it.
func restoreCall(t *testing.T, c *Call, state []byte, st *simStore) *Call {
	t.Helper()
	r, err := RestoreCall(state, *st)
	if err != nil {
		t.Fatalf("RestoreCall: %v", err)
	}
	if a, b := c.AppendState(nil), r.AppendState(nil); !bytes.Equal(a, b) {
		t.Fatalf("restored state differs:\n%x\n%x", a, b)
	}
	if c.Size() != r.Size() {
		t.Fatalf("restored Size %d, original %d", r.Size(), c.Size())
	}
	for s, y := range r.TakeSync() {
		if y.Changed {
			t.Fatalf("stream %d: a call just restored has a change to sync: %+v", s, y)
		}
	}
	return r
}

// checkRoundTrip drives a call through ops and checks, against a call
// that is never stored, that a call stored and restored after every step
// (the chain), and one stored once and restored after step cut, for every
// cut (or only the middle one when !allCuts), give exactly the same
// revisions and sizes on every later step.
func checkRoundTrip(t *testing.T, limit int, ops []callOp, allCuts bool) {
	t.Helper()
	ref := make([]stepResult, len(ops))
	orig := NewCall("c1", limit)
	var rules revisionRules
	for i, op := range ops {
		if op.obs != nil {
			rules.before(orig, op.obs)
		}
		ref[i] = runOp(orig, op)
		if ref[i].OK {
			rules.check(t, ref[i].Rev)
		}
	}
	same := func(what string, i int, got stepResult) {
		t.Helper()
		if !reflect.DeepEqual(got, ref[i]) {
			t.Fatalf("%s, step %d (%+v):\n got %s\nwant %s", what, i, ops[i], showStep(got), showStep(ref[i]))
		}
	}

	c := NewCall("c1", limit)
	var st simStore
	c = restoreCall(t, c, saveCall(t, c, &st, false), &st)
	for i, op := range ops {
		same("restored after every step", i, runOp(c, op))
		c = restoreCall(t, c, saveCall(t, c, &st, i%2 == 1), &st)
	}

	cuts := []int{len(ops) / 2}
	if allCuts {
		cuts = cuts[:0]
		for cut := range len(ops) + 1 {
			cuts = append(cuts, cut)
		}
	}
	for _, cut := range cuts {
		c := NewCall("c1", limit)
		var st simStore
		for i := range cut {
			runOp(c, ops[i])
			if i%3 == 2 { // some steps store the call, some do not
				saveCall(t, c, &st, false)
			}
		}
		c = restoreCall(t, c, saveCall(t, c, &st, cut%2 == 0), &st)
		for i := cut; i < len(ops); i++ {
			same(fmt.Sprintf("restored after step %d", cut-1), i, runOp(c, ops[i]))
			if i%4 == 3 {
				saveCall(t, c, &st, true)
			}
		}
	}
}

func showStep(s stepResult) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "ok=%v size=%d ended=%v shell=%v/%v cmd=%q rev=%+v", s.OK, s.Size, s.Ended, s.Shell, s.NotShell, s.Command, s.Rev)
	if s.Rev.ExitCode != nil {
		fmt.Fprintf(&sb, " exit=%d", *s.Rev.ExitCode)
	}
	for i := range NumStreams {
		if ch := s.Rev.Texts[i]; ch != nil {
			fmt.Fprintf(&sb, " texts[%d]=%+v", i, *ch)
		}
		if ch := s.Rev.Changes[i]; ch != nil {
			fmt.Fprintf(&sb, " changes[%d]=%+v", i, *ch)
		}
	}
	return sb.String()
}

// roundTripScript is a named call life for the state tests.
type roundTripScript struct {
	name  string
	limit int
	ops   []callOp
}

// tableScripts turns the observation tables of the other tests into call
// lives.
func tableScripts() []roundTripScript {
	var out []roundTripScript
	for _, tt := range callOutcomeTests {
		var ops []callOp
		for _, o := range tt.obs {
			ops = append(ops, obsOp(o))
		}
		if tt.end != nil {
			ops = append(ops, endOp(*tt.end))
		}
		out = append(out, roundTripScript{"outcome/" + tt.name, 1024, ops})
	}
	for _, tt := range cancelRequestedTests {
		var ops []callOp
		for _, o := range tt.before {
			ops = append(ops, obsOp(o))
		}
		ops = append(ops, callOp{cancelReq: true})
		for _, o := range tt.after {
			ops = append(ops, obsOp(o))
		}
		if tt.end {
			ops = append(ops, endOp(true))
		}
		out = append(out, roundTripScript{"cancel/" + tt.name, 1024, ops})
	}
	for _, tt := range echoStrippedTests {
		ops := []callOp{obsOp(Observation{Shell: ShellYes, Command: tt.command, Cwd: tt.cwd, Status: StatusRunning})}
		for _, x := range tt.texts {
			ops = append(ops, textsOp(x))
		}
		ops = append(ops, obsOp(Observation{Status: StatusCompleted, Exit: &Exit{Code: 0, Source: ExitTerminal}}))
		out = append(out, roundTripScript{"echo/" + tt.name, 1 << 16, ops})
	}
	for _, tt := range bufferRuleTests {
		ops := []callOp{obsOp(Observation{Shell: ShellYes, Command: "make", Status: StatusRunning})}
		for _, s := range tt.steps {
			if !s.flush {
				ops = append(ops, textsOp(s.obs))
			}
		}
		ops = append(ops, endOp(false), textsOp(delta("late")))
		out = append(out, roundTripScript{"buffer/" + tt.name, tt.limit, ops})
	}
	return out
}

// specialScripts are the lives whose state is hardest to carry over: text
// held back between observations, compaction, and late output.
func specialScripts() []roundTripScript {
	shell := obsOp(Observation{Shell: ShellYes, Command: "make all", Cwd: "/w", Status: StatusRunning})
	var deltas []callOp
	for i := range 60 {
		deltas = append(deltas, textsOp(delta(fmt.Sprintf("l%02dé€\n", i))))
	}
	var windows []callOp
	for i := range 40 {
		windows = append(windows, textsOp(window(lines(max(0, i-5), i+1))))
	}
	var bytesSplit []callOp
	for _, p := range []string{"a\xe2", "\x82", "\xacb", "\xf0\x9f", "\x98", "\x80\xff", "c\xe2\x82"} {
		bytesSplit = append(bytesSplit, textsOp(bdelta(p)))
	}
	noRev := func(ops []callOp) []callOp {
		out := append([]callOp(nil), ops...)
		for i := range out {
			out[i].noRev = i%3 != 2
		}
		return out
	}
	join := func(parts ...[]callOp) []callOp {
		var out []callOp
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	return []roundTripScript{
		{"split UTF-8 carried in the state", 64, join([]callOp{shell}, bytesSplit, []callOp{endOp(false)})},
		{"split UTF-8, revisions now and then", 64, join([]callOp{shell}, noRev(bytesSplit), []callOp{endOp(false)})},
		{"deltas past the limit", 64, join([]callOp{shell}, deltas, []callOp{
			obsOp(Observation{Status: StatusCompleted, Exit: exit(2, ExitTerminal), Texts: []Text{final("all of it\n")}}),
			textsOp(delta("late\n")),
		})},
		{"deltas past the limit, revisions now and then", 48, join([]callOp{shell}, noRev(deltas), []callOp{endOp(false)})},
		{"deltas past a large limit", 4096, join([]callOp{shell}, deltas, []callOp{endOp(true)})},
		{"windows over a small limit", 40, join([]callOp{shell}, windows, []callOp{
			obsOp(Observation{Status: StatusCompleted, Texts: []Text{final(lines(0, 40))}}),
		})},
		{"windows, revisions now and then", 200, join([]callOp{shell}, noRev(windows), []callOp{endOp(false)})},
		{"snapshots grow, shrink and are cut short", 32, []callOp{
			shell,
			textsOp(snap(lines(0, 3))), textsOp(snap(lines(0, 6))), textsOp(snap(lines(0, 2))),
			textsOp(Text{Kind: Snapshot, Text: lines(0, 1), Truncated: true, Head: true}),
			textsOp(Text{Kind: Snapshot, Text: lines(0, 9), TotalBytes: 900}),
			textsOp(truncd(delta("x"))),
			obsOp(Observation{Status: StatusFailed, Texts: []Text{{Kind: Final, Text: lines(0, 12), Truncated: true}}}),
		}},
		{"exit words put back after the final", 1024, []callOp{
			shell,
			obsOp(Observation{Exit: exit(3, ExitText), Worded: Worded{Exit: true}, Texts: []Text{{Kind: Snapshot, Text: "real\n", Whole: "Exit code 3\nreal\n"}}}),
			obsOp(Observation{Status: StatusCompleted, ExitWordsOutput: true}),
		}},
		{"exit words the agent's, the final failed", 1024, []callOp{
			shell,
			obsOp(Observation{Exit: exit(3, ExitText), Worded: Worded{Exit: true}, Texts: []Text{{Kind: Snapshot, Text: "real\n", Whole: "real\nexit status 3\n"}}}),
			textsOp(delta("more\n")),
			obsOp(Observation{Status: StatusFailed}),
		}},
		// Held words (WordsIfFailed) keep what their texts say of how to
		// apply them: a stream's text alone (IfSplit) applies only to a
		// stream the call holds, and a restatement that may have lost
		// its trailing whitespace (TrimmedEnd) keeps the held text's.
		{"held words of a stream alone, the end without a final", 1024, []callOp{
			shell,
			obsOp(Observation{Cancelled: true, CancelNotice: "refused", Worded: Worded{Cancelled: true}, WordsIfFailed: true,
				Texts: []Text{{Stream: Stdout, Kind: Snapshot, Text: "part", Whole: "part\nrefused", IfSplit: true}}}),
			endOp(false),
		}},
		{"held words restating trimmed, then a failed final", 1024, []callOp{
			shell,
			textsOp(snap("out\n")),
			obsOp(Observation{Cancelled: true, CancelNotice: "refused", Worded: Worded{Cancelled: true}, WordsIfFailed: true,
				Texts: []Text{{Kind: Snapshot, Text: "out", Whole: "out\nrefused", TrimmedEnd: true}}}),
			obsOp(Observation{Status: StatusFailed}),
		}},
		{"echo held across updates", 1024, []callOp{
			shell,
			textsOp(delta("$ ma")), textsOp(delta("ke a")), textsOp(delta("ll\r")), textsOp(delta("\nok\n")),
			textsOp(delta("more\n")), endOp(false),
		}},
		{"echo held in bytes across updates, then not an echo", 1024, []callOp{
			shell,
			textsOp(bdelta("$ ma")), textsOp(truncd(bdelta("ke \xc3"))), textsOp(bdelta("\xa9\n")), endOp(false),
		}},
		{"echo held as a snapshot, then a delta", 1024, []callOp{
			obsOp(Observation{Shell: ShellYes, Command: "make", Status: StatusRunning, Texts: []Text{{Kind: Snapshot, Text: "$ ma", TotalBytes: 4}}}),
			textsOp(delta("ke\nok\n")),
			obsOp(Observation{Status: StatusCompleted}),
		}},
		{"echo held as a byte snapshot at the end", 1024, []callOp{
			obsOp(Observation{Shell: ShellYes, Command: "make", Status: StatusRunning}),
			textsOp(Text{Kind: Window, Bytes: []byte("$ mak")}),
			endOp(false),
			textsOp(delta("late")),
		}},
		{"echo held with a truncation flag, then not an echo", 1024, []callOp{
			shell,
			textsOp(truncd(bdelta("$ ma"))), textsOp(delta("x\n")), endOp(false),
		}},
		{"echo held as bytes, released with a split rune", 1024, []callOp{
			obsOp(Observation{Shell: ShellYes, Command: "echo é", Status: StatusRunning}),
			textsOp(bdelta("$ ec")), textsOp(delta("x\xc3")), textsOp(bdelta("\xa9")), endOp(false),
		}},
		{"echo held as a snapshot with a size, released at the end", 1024, []callOp{
			shell,
			textsOp(Text{Kind: Snapshot, Text: "$ make a", TotalBytes: 500}),
			endOp(false),
		}},
		{"echo held on two streams", 1024, []callOp{
			shell,
			textsOp(Text{Stream: Stdout, Kind: Delta, Text: "$ make"}, Text{Stream: Stderr, Kind: Delta, Text: "warn\n"}),
			textsOp(Text{Stream: Stdout, Kind: Delta, Text: " all\nbuilt\n"}),
			textsOp(Text{Stream: Stdout, Kind: Snapshot, Text: "$ make all\nbuilt\nmore\n", IfSplit: true}),
			obsOp(Observation{Status: StatusCompleted, Exit: exit(0, ExitStructured)}),
		}},
		{"echo held after the end is released", 1024, []callOp{
			obsOp(Observation{Shell: ShellYes, Command: "ls -la", Status: StatusCompleted, Exit: exit(0, ExitTerminal)}),
			textsOp(delta("$ ls")),
		}},
		{"permission ask, rejected", 1024, []callOp{
			obsOp(Observation{Shell: ShellYes, PermissionAsk: true, Command: "rm -rf x", ApprovalReason: "dangerous"}),
			{answer: 2},
			obsOp(Observation{Status: StatusFailed, Cancelled: true, CancelNotice: "user said no"}),
		}},
		{"permission ask, accepted, then a late exit", 1024, []callOp{
			obsOp(Observation{Shell: ShellYes, PermissionAsk: true, Command: "ls", CommandFromTitle: true}),
			{answer: 1},
			obsOp(Observation{Command: "ls -la", Status: StatusRunning, TerminalID: "t1", Background: true, Description: "list"}),
			obsOp(Observation{Status: StatusCompleted}),
			obsOp(Observation{Exit: exit(3, ExitTerminal)}),
			obsOp(Observation{Exit: &Exit{Code: 0, Source: ExitText, Placeholder: true}, Signal: "SIGTERM"}),
		}},
		{"cancel asked, late output after the end", 1024, []callOp{
			obsOp(Observation{Shell: ShellYes, Status: StatusRunning, Texts: []Text{delta("tick1\n")}}),
			{cancelReq: true},
			endOp(true),
			textsOp(delta("tick2\n")),
			obsOp(Observation{Status: StatusRunning, Texts: []Text{delta("tick3\n")}}),
			obsOp(Observation{Status: StatusCompleted, Exit: exit(0, ExitTerminal)}),
		}},
		{"new client gets whole texts", 64, []callOp{
			shell,
			{obs: &Observation{Texts: []Text{delta("abc")}}, whole: true},
			textsOp(delta(strings.Repeat("x", 100))),
			{obs: &Observation{Texts: []Text{{Stream: Stderr, Kind: Delta, Text: "e"}}}, whole: true},
			{end: true, whole: true},
		}},
		{"a call that is not a shell", 1024, []callOp{
			obsOp(Observation{Shell: ShellNo, Command: "read a.txt"}),
			obsOp(Observation{Status: StatusCompleted, Texts: []Text{final("contents")}}),
		}},
		{"signal, timeout and verdicts", 1024, []callOp{
			shell,
			obsOp(Observation{Signal: "SIGKILL", Exit: exit(0, ExitStructured)}),
			obsOp(Observation{TimedOut: true, Verdict: VerdictFailed, Failed: true, Succeeded: true}),
			obsOp(Observation{Status: StatusCompleted, Exit: exit(137, ExitStatus)}),
		}},
	}
}

func TestStateRoundTrip(t *testing.T) {
	scripts := append(tableScripts(), specialScripts()...)
	for _, sc := range scripts {
		t.Run(sc.name, func(t *testing.T) {
			checkRoundTrip(t, sc.limit, sc.ops, true)
			// The same life, with a revision only after the last step.
			sparse := append([]callOp(nil), sc.ops...)
			for i := range sparse {
				sparse[i].noRev = i < len(sparse)-1
			}
			checkRoundTrip(t, sc.limit, sparse, true)
		})
	}
}

// randomScript is a random call life: observations of every kind on every
// stream, pieces of its command's echo, ends, answers and cancels.
func randomScript(rng *rand.Rand) roundTripScript {
	commands := []string{"", "ls", "make all", "cat a.txt", "cd sub\nls"}
	pieces := []string{"a", "héllo\n", "\xff\xfe", "\xe2\x82", "\xac", "\xf0\x9f", "\x98\x80", "$ ", "make", " all", "\n", "ls", "\r\n", "cat /w/a.txt", strings.Repeat("x", 70)}
	kinds := []TextKind{Delta, Delta, Snapshot, Window, Final, 9}
	limit := minLimit + rng.IntN(120)
	cmd := commands[rng.IntN(len(commands))]
	ops := []callOp{obsOp(Observation{Shell: ShellYes, Command: cmd, Cwd: "/w", Status: Status(rng.IntN(3))})}
	var whole string // what was said on Combined, for snapshots and windows that extend it
	for range 6 + rng.IntN(30) {
		var op callOp
		switch rng.IntN(16) {
		case 0:
			op = endOp(rng.IntN(2) == 0)
		case 1:
			op = callOp{answer: int8(1 + rng.IntN(2))}
		case 2:
			op = callOp{cancelReq: true}
		default:
			o := &Observation{}
			switch rng.IntN(10) {
			case 0:
				o.Status = Status(rng.IntN(5))
			case 1:
				o.Exit = &Exit{Code: int32(rng.IntN(3)), Source: ExitSource(1 + rng.IntN(4)), Placeholder: rng.IntN(3) == 0}
			case 2:
				o.Signal, o.TimedOut, o.Verdict = "SIGINT", rng.IntN(2) == 0, Verdict(rng.IntN(4))
			case 3:
				o.Cancelled, o.CancelNotice = true, "stopped"
			case 4:
				o.PermissionAsk, o.ApprovalReason, o.Command = true, "why", cmd+" -x"
			case 5:
				// Words whose owner the agent's final decides.
				o.Cancelled, o.CancelNotice, o.Worded.Cancelled, o.WordsIfFailed = true, "refused", true, rng.IntN(4) != 0
				o.TimedOut, o.Worded.TimedOut = rng.IntN(2) == 0, true
				if rng.IntN(2) == 0 {
					o.Failed, o.FailNotice, o.Worded.Failed = true, "no such directory", true
				}
			}
			for range rng.IntN(3) {
				var sb strings.Builder
				for range rng.IntN(5) {
					sb.WriteString(pieces[rng.IntN(len(pieces))])
				}
				tx := Text{Stream: Stream(rng.IntN(NumStreams)), Kind: kinds[rng.IntN(len(kinds))], Text: sb.String()}
				if tx.Stream == Combined {
					switch tx.Kind {
					case Snapshot, Final:
						if rng.IntN(2) == 0 {
							tx.Text = whole + tx.Text
						}
					case Window:
						w := whole + tx.Text
						tx.Text = w[max(0, len(w)-rng.IntN(2*limit+8)):]
					}
					if tx.Kind == Delta {
						whole += tx.Text
					} else {
						whole = tx.Text
					}
				}
				tx.Truncated = rng.IntN(6) == 0
				tx.Head = tx.Truncated && rng.IntN(2) == 0
				tx.IfSplit = rng.IntN(5) == 0
				tx.TrimmedEnd = rng.IntN(4) == 0
				if tx.Kind == Delta && rng.IntN(3) == 0 {
					tx.Rolling = Rolling{Lines: rng.IntN(4), Bytes: rng.IntN(3) * limit / 2}
				}
				if rng.IntN(6) == 0 {
					tx.TotalBytes = int64(rng.IntN(1000))
				}
				if rng.IntN(2) == 0 {
					tx.Bytes, tx.Text = []byte(tx.Text), ""
				} else if o.Worded.Cancelled && rng.IntN(3) != 0 {
					tx.Whole = tx.Text + "\nrefused"
				}
				o.Texts = append(o.Texts, tx)
			}
			op.obs = o
		}
		op.noRev = rng.IntN(3) == 0
		op.whole = rng.IntN(10) == 0
		ops = append(ops, op)
	}
	return roundTripScript{"random", limit, ops}
}

// TestStateRoundTripRandom: the round trip on random call lives.
func TestStateRoundTripRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 7))
	rounds := 300
	if testing.Short() {
		rounds = 50
	}
	for round := range rounds {
		sc := randomScript(rng)
		t.Run(fmt.Sprint(round), func(t *testing.T) { checkRoundTrip(t, sc.limit, sc.ops, round%4 == 0) })
	}
}

// TestTakeSyncCompacts: a stream that only grows is stored by appends of
// just the new text, and compacted by a Replace before it passes twice
// the limit; the stored stream always ends with the held text.
func TestTakeSyncCompacts(t *testing.T) {
	const limit = 100
	c := NewCall("c1", limit)
	c.Apply(&Observation{Shell: ShellYes})
	var st simStore
	var appends, replaces, sent int
	for i := range 200 {
		line := fmt.Sprintf("%03d\n", i)
		c.Apply(&Observation{Texts: []Text{delta(line)}})
		y := c.TakeSync()[Combined]
		switch {
		case !y.Changed:
			t.Fatalf("step %d: no sync after a delta", i)
		case y.Replace:
			replaces++
			if len(y.Data) > limit {
				t.Fatalf("step %d: replace of %d bytes, over the limit", i, len(y.Data))
			}
		default:
			appends++
			if string(y.Data) != line {
				t.Fatalf("step %d: append %q, want just the delta %q", i, y.Data, line)
			}
		}
		sent += len(y.Data)
		st.apply([NumStreams]Sync{y})
		if len(st[Combined]) > 2*limit {
			t.Fatalf("step %d: %d bytes stored", i, len(st[Combined]))
		}
		if y := c.TakeSync(); y[Combined].Changed {
			t.Fatalf("step %d: a second TakeSync reports %+v", i, y[Combined])
		}
	}
	// 800 bytes of output: a replace (about limit bytes) every ~limit
	// bytes appended, so at most about twice the output is sent.
	if replaces == 0 || appends < 150 || sent > 2*800 {
		t.Fatalf("%d appends, %d replaces, %d bytes sent for 800 bytes of output", appends, replaces, sent)
	}
}

// TestTakeSyncReplaces: every change to the held text that is not an
// append is a Replace with the whole held text.
func TestTakeSyncReplaces(t *testing.T) {
	tests := []struct {
		name   string
		before []Text
		then   Text
		want   string
	}{
		{"shorter snapshot", []Text{snap("abcdef")}, snap("abc"), "abc"},
		{"rewritten snapshot", []Text{snap("abc")}, snap("xbcd"), "xbcd"},
		{"empty snapshot", []Text{delta("abc")}, snap(""), ""},
		{"window without overlap", []Text{delta(lines(0, 3))}, window(lines(5, 7)), lines(5, 7)},
		{"final that differs", []Text{delta("ab")}, final("xyz"), "xyz"},
		{"delta longer than the limit", []Text{delta("ab")}, delta(strings.Repeat("y", 70)), strings.Repeat("y", 64)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCall("c1", 64)
			c.Apply(&Observation{Shell: ShellYes, Texts: tt.before})
			c.TakeSync()
			c.Apply(&Observation{Texts: []Text{tt.then}})
			y := c.TakeSync()[Combined]
			if !y.Changed || !y.Replace || string(y.Data) != tt.want {
				t.Fatalf("sync %+v, want a replace with %q", y, tt.want)
			}
		})
	}
}

// TestRestoreCallErrors: input that is not a stored call is an error that
// names the problem.
func TestRestoreCallErrors(t *testing.T) {
	c := NewCall("c1", 64)
	c.Apply(&Observation{Shell: ShellYes, Command: "ls", Texts: []Text{delta("abcdef"), bdelta("\xe2\x82")}})
	var st simStore
	st.apply(c.TakeSync())
	state := c.AppendState(nil)
	if _, err := RestoreCall(state, st); err != nil {
		t.Fatalf("a good state: %v", err)
	}
	tests := []struct {
		name    string
		state   []byte
		streams simStore
		want    string
	}{
		{"empty", nil, st, "format version: cut short"},
		{"other version", append([]byte{9}, state[1:]...), st, "format version 9"},
		{"cut short", state[:len(state)-1], st, "cut short"},
		{"trailing bytes", append(append([]byte(nil), state...), 0), st, "1 bytes after the end"},
		{"stream missing", state, simStore{}, "stream 0: 0 stored bytes, but the state says 6"},
		{"stream too long", state, simStore{[]byte("xabcdef")}, "stream 0: 7 stored bytes, but the state says 6"},
		{"stream for no buffer", state, simStore{st[0], []byte("x")}, "stream 1: 1 stored bytes for a stream the call does not have"},
		{"held text not UTF-8", state, simStore{[]byte("abcd\xff\xfe")}, "not valid UTF-8"},
		{"id longer than the input", []byte{stateVersion, 0x7f, 'a'}, st, "call id of 127 bytes, but only 1 remain"},
		{"huge limit", []byte{stateVersion, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}, st, "text limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := RestoreCall(tt.state, tt.streams)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want one saying %q", err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "call state: ") {
				t.Fatalf("err %q does not say it is about the call state", err)
			}
		})
	}
	if _, err := RestoreCall(nil, simStore{}); !errors.Is(err, wire.ErrShort) {
		t.Fatalf("empty state: %v", err)
	}
	// The next versions are a newer build's, not corrupt; one far beyond
	// (a spoiled byte) is corrupt.
	for v, newer := range map[byte]bool{stateVersion + 1: true, stateVersion + newerVersions: true, stateVersion + newerVersions + 1: false, 0: false, 'j': false} {
		_, err := RestoreCall(append([]byte{v}, state[1:]...), st)
		if err == nil || errors.Is(err, ErrNewerState) != newer {
			t.Errorf("format version %d: %v (newer build's: %v)", v, err, newer)
		}
	}
}

// TestStateHeldFailureVersion: a state is written in the earliest format
// that holds it, so a build one format behind reads it: only held words
// with a failure (Worded.Failed) need heldVersion, and a state of
// the first format that claims one is corrupt.
func TestStateHeldFailureVersion(t *testing.T) {
	for _, failed := range []bool{false, true} {
		c := NewCall("c1", 1024)
		c.Apply(&Observation{Shell: ShellYes, Command: "cd /gone", Status: StatusRunning})
		o := Observation{WordsIfFailed: true, Texts: []Text{{Stream: Combined, Kind: Snapshot, Whole: "no such directory\n"}}}
		if failed {
			o.Failed, o.FailNotice, o.Worded.Failed = true, "no such directory", true
		} else {
			o.Cancelled, o.CancelNotice, o.Worded.Cancelled = true, "no such directory", true
		}
		c.Apply(&o)
		var st simStore
		state := saveCall(t, c, &st, false)
		want := byte(firstVersion)
		if failed {
			want = heldVersion
		}
		if state[0] != want {
			t.Fatalf("failed %v: format version %d, want %d", failed, state[0], want)
		}
		r := restoreCall(t, c, state, &st)
		// A failed final makes the held words the agent's (an end with
		// no final makes a message and nothing more output).
		r.Apply(&Observation{Status: StatusFailed})
		rev, _ := r.Revision()
		if failed && (rev.Outcome != Failed || !strings.Contains(rev.OutcomeReason, "no such directory")) {
			t.Fatalf("restored held failure ends %v: %s", rev.Outcome, rev.OutcomeReason)
		}
		if failed {
			if _, err := RestoreCall(append([]byte{firstVersion}, state[1:]...), st); err == nil || !strings.Contains(err.Error(), "unknown held flags") {
				t.Fatalf("a first-format state with a held failure: %v", err)
			}
		}
	}
}

// FuzzRestoreCall: arbitrary state bytes and streams never panic; what is
// accepted encodes back to an equivalent state (the same, but for the
// form of its varints) and can be driven on.
func FuzzRestoreCall(f *testing.F) {
	for _, sc := range specialScripts() {
		c := NewCall("c1", sc.limit)
		var st simStore
		for _, op := range sc.ops[:len(sc.ops)/2] {
			runOp(c, op)
		}
		st.apply(c.TakeSync())
		f.Add(c.AppendState(nil), st[0], st[1], st[2])
	}
	f.Fuzz(func(t *testing.T, state, s0, s1, s2 []byte) {
		streams := simStore{s0, s1, s2}
		c, err := RestoreCall(state, streams)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "call state: ") {
				t.Fatalf("err %q", err)
			}
			return
		}
		// Varints may come in a longer form than AppendState writes, so
		// the state is compared once it is written back.
		again := c.AppendState(nil)
		if len(again) > len(state) {
			t.Fatalf("state %x encodes back longer, as %x", state, again)
		}
		c2, err := RestoreCall(again, streams)
		if err != nil {
			t.Fatalf("state %x encodes back as %x, which is refused: %v", state, again, err)
		}
		if third := c2.AppendState(nil); !bytes.Equal(third, again) {
			t.Fatalf("state %x encodes back as %x, then as %x", state, again, third)
		}
		var st simStore
		for i, p := range streams {
			st[i] = bytes.Clone(p)
		}
		for _, op := range []callOp{
			textsOp(bdelta("\xe2\x82"), Text{Stream: Stdout, Kind: Window, Text: "windowed text"}),
			textsOp(snap("abc"), Text{Stream: Stderr, Kind: Final, Text: "e", Truncated: true}),
			textsOp(delta(strings.Repeat("z", 100))),
			endOp(false),
			textsOp(Text{Kind: Snapshot, Text: "late", Head: true, Truncated: true}),
		} {
			runOp(c, op)
			st.apply(c.TakeSync())
			if _, err := RestoreCall(c.AppendState(nil), st); err != nil {
				t.Fatalf("after %+v: %v", op, err)
			}
		}
	})
}

// FuzzStateRoundTrip: the round trip of TestStateRoundTrip on call lives
// built from fuzz input in the style of FuzzBuffer: texts of every kind
// on every stream (pieces of runes and of the command's echo among them),
// exit evidence, ends, answers and cancels.
func FuzzStateRoundTrip(f *testing.F) {
	f.Add([]byte("\x05\x01\x00\x00\x04$ ls\x00\x01\x03\n\x01a\x06\x02"))
	f.Add([]byte("\x20\x02\x00\x08\x06abcdef\x00\x29\x08abcdefgh\x00\x12\x03\xfe\xfd\xfc\x06\x00"))
	f.Add([]byte("\x03\x03\x00\x11\x02\xf6\xf7\x00\x11\x02\xf8\xf9\x05\x13\x06\x05\x07\x03"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fuzzReader{p: data}
		limit := minLimit + int(r.byte()%48)
		commands := []string{"", "ls", "make all", "echo é"}
		cmd := commands[r.byte()%byte(len(commands))]
		ops := []callOp{obsOp(Observation{Shell: ShellYes, Command: cmd, Cwd: "/w", Status: StatusRunning})}
		var whole string // what Combined was told, for restatements that extend it
		for len(r.p) > 0 && len(ops) < 40 {
			h := r.byte()
			var op callOp
			switch h & 7 {
			case 0, 1, 2, 3:
				o := &Observation{}
				for range 1 + int(h>>3&1) {
					a := r.byte()
					content := fuzzContent(r.bytes(int(r.byte() % 16)))
					if a&0x80 != 0 && cmd != "" {
						content = ("$ " + cmd + "\n" + content)[:int(a)%(len(cmd)+4)]
					}
					tx := Text{Stream: Stream(a % 3), Kind: TextKind(a >> 2 & 7 % 5), Truncated: a&0x40 != 0}
					if tx.Stream == Combined {
						switch tx.Kind {
						case Snapshot, Final:
							if a&0x20 != 0 {
								content = whole + content
							}
						case Window:
							w := whole + content
							content = w[max(0, len(w)-int(r.byte())):]
						}
						if tx.Kind == Snapshot || tx.Kind == Window || tx.Kind == Final {
							whole = content
						} else {
							whole += content
						}
					}
					if h&0x10 != 0 {
						tx.Bytes = []byte(content)
					} else {
						tx.Text = content
					}
					o.Texts = append(o.Texts, tx)
				}
				if h&0x20 != 0 {
					o.Status = StatusRunning
				}
				op.obs = o
			case 4:
				a := r.byte()
				o := &Observation{Status: Status(a % 5)}
				if a&8 != 0 {
					o.Exit = &Exit{Code: int32(a >> 4 & 3), Source: ExitSource(1 + a>>6), Placeholder: h&0x10 != 0}
				}
				if h&0x20 != 0 {
					o.Signal = "SIGKILL"
				}
				o.Verdict = Verdict(h >> 6)
				op.obs = o
			case 5:
				op = endOp(h&0x10 != 0)
			case 6:
				op = callOp{answer: int8(1 + h>>4&1), cancelReq: h&0x20 != 0}
				if op.cancelReq {
					op.answer = 0
				}
			case 7:
				op.obs = &Observation{PermissionAsk: true, Command: cmd + " -x", ApprovalReason: "ask", Cancelled: h&0x10 != 0}
			}
			op.noRev = h&0x40 != 0 && h&7 != 5
			op.whole = h&0x80 != 0
			ops = append(ops, op)
		}
		checkRoundTrip(t, limit, ops, len(ops) <= 12)
	})
}
