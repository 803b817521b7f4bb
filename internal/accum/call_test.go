package accum

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func exit(code int32, src ExitSource) *Exit { return &Exit{Code: code, Source: src} }

// callOutcomeTests are calls and the outcome each ends with (also
// replayed by the state tests).
var callOutcomeTests = []struct {
	name     string
	obs      []Observation
	end      *bool // End(cancelled) after the observations, when set
	want     Outcome
	wantExit *int32
}{
	{
		name: "known exit 0 succeeds",
		obs:  []Observation{{Shell: ShellYes, Status: StatusCompleted, Exit: exit(0, ExitTerminal)}},
		want: Succeeded, wantExit: ptr(0),
	},
	{
		name: "nonzero exit under completed fails",
		obs:  []Observation{{Shell: ShellYes, Status: StatusCompleted, Exit: exit(3, ExitStructured)}},
		want: Failed, wantExit: ptr(3),
	},
	{
		name: "completed without exit is unknown, never 0",
		obs:  []Observation{{Shell: ShellYes, Status: StatusCompleted}},
		want: Unknown,
	},
	{
		name: "failed without exit fails",
		obs:  []Observation{{Shell: ShellYes, Status: StatusFailed}},
		want: Failed,
	},
	{
		name: "failed with exit 0 trusts the exit",
		obs:  []Observation{{Shell: ShellYes, Status: StatusFailed, Exit: exit(0, ExitTerminal)}},
		want: Succeeded, wantExit: ptr(0),
	},
	{
		name: "placeholder from a running frame is dropped",
		obs: []Observation{
			{Shell: ShellYes, Status: StatusRunning, Exit: &Exit{Code: 0, Source: ExitStructured, Placeholder: true}},
			{Status: StatusCompleted},
		},
		want: Unknown,
	},
	{
		name: "placeholder then real exit",
		obs: []Observation{
			{Shell: ShellYes, Status: StatusRunning, Exit: &Exit{Code: 0, Source: ExitStructured, Placeholder: true}},
			{Status: StatusCompleted, Exit: exit(7, ExitStructured)},
		},
		want: Failed, wantExit: ptr(7),
	},
	{
		name: "stronger source wins over a later weaker one",
		obs: []Observation{
			{Shell: ShellYes, Exit: exit(2, ExitTerminal)},
			{Status: StatusCompleted, Exit: exit(0, ExitText)},
		},
		want: Failed, wantExit: ptr(2),
	},
	{
		name: "signal fails",
		obs:  []Observation{{Shell: ShellYes, Status: StatusCompleted, Signal: "SIGKILL"}},
		want: Failed,
	},
	{
		name: "timeout fails even with exit 0",
		obs:  []Observation{{Shell: ShellYes, Status: StatusCompleted, TimedOut: true, Exit: exit(0, ExitStructured)}},
		want: Failed, wantExit: ptr(0),
	},
	{
		name: "cancelled keeps its exit code",
		obs:  []Observation{{Shell: ShellYes, Status: StatusFailed, Cancelled: true, Exit: exit(130, ExitStructured)}},
		want: Cancelled, wantExit: ptr(130),
	},
	{
		name: "dialect failure without exit",
		obs:  []Observation{{Shell: ShellYes, Status: StatusCompleted, Failed: true}},
		want: Failed,
	},
	{
		name: "dialect success proof without exit",
		obs:  []Observation{{Shell: ShellYes, Status: StatusCompleted, Succeeded: true}},
		want: Succeeded,
	},
	{
		name: "turn end under a running call is unknown",
		obs:  []Observation{{Shell: ShellYes, Status: StatusRunning}},
		end:  ptrBool(false),
		want: Unknown,
	},
	{
		name: "cancelled turn under a running call",
		obs:  []Observation{{Shell: ShellYes, Status: StatusRunning}},
		end:  ptrBool(true),
		want: Cancelled,
	},
	{
		name: "exit 0 next to a signal is not an exit status",
		obs:  []Observation{{Shell: ShellYes, Status: StatusCompleted, Signal: "SIGKILL", Exit: exit(0, ExitStructured)}},
		want: Failed,
	},
	{
		name: "nonzero exit next to a signal is kept",
		obs:  []Observation{{Shell: ShellYes, Status: StatusCompleted, Signal: "SIGKILL", Exit: exit(137, ExitStructured)}},
		want: Failed, wantExit: ptr(137),
	},
	{
		name: "failed verdict outweighs exit 0",
		obs:  []Observation{{Shell: ShellYes, Status: StatusCompleted, Verdict: VerdictFailed, Exit: exit(0, ExitStructured)}},
		want: Failed, wantExit: ptr(0),
	},
	{
		name: "failed verdict then a later exit 0 still fails",
		obs: []Observation{
			{Shell: ShellYes, Status: StatusFailed, Verdict: VerdictFailed},
			{Exit: exit(0, ExitTerminal)},
		},
		want: Failed, wantExit: ptr(0),
	},
	{
		name: "cancelled beside exit 0 under completed is cancelled",
		obs:  []Observation{{Shell: ShellYes, Status: StatusCompleted, Cancelled: true, Exit: exit(0, ExitStructured)}},
		want: Cancelled, wantExit: ptr(0),
	},
	{
		name: "failed verdict with a nonzero exit names the exit",
		obs:  []Observation{{Shell: ShellYes, Status: StatusFailed, Verdict: VerdictFailed, Exit: exit(2, ExitStructured)}},
		want: Failed, wantExit: ptr(2),
	},
	{
		name: "late exit after the end sharpens the outcome",
		obs: []Observation{
			{Shell: ShellYes, Status: StatusCompleted},
			{Exit: exit(1, ExitTerminal)},
		},
		want: Failed, wantExit: ptr(1),
	},
}

func TestCallOutcome(t *testing.T) {
	for _, tt := range callOutcomeTests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCall("c1", 1024)
			for i := range tt.obs {
				c.Apply(&tt.obs[i])
			}
			if tt.end != nil {
				c.End(*tt.end, "turn ended")
			}
			r, ok := c.Revision()
			if !ok {
				t.Fatal("no revision")
			}
			if r.State != Ended || r.Outcome != tt.want {
				t.Fatalf("state %v outcome %v (%s), want ended %v", r.State, r.Outcome, r.OutcomeReason, tt.want)
			}
			if r.OutcomeReason == "" {
				t.Error("ended without an outcome reason")
			}
			switch {
			case tt.wantExit == nil && r.ExitCode != nil:
				t.Errorf("exit %d, want unknown", *r.ExitCode)
			case tt.wantExit != nil && (r.ExitCode == nil || *r.ExitCode != *tt.wantExit):
				t.Errorf("exit %v, want %d", r.ExitCode, *tt.wantExit)
			}
		})
	}
}

func TestCallRevisions(t *testing.T) {
	c := NewCall("c1", 1024)
	c.Apply(&Observation{Opens: true, Shell: ShellYes, Command: "seq 3", Status: StatusRunning})
	r, ok := c.Revision()
	if !ok || r.Number != 1 || r.State != Running || r.Command != "seq 3" || r.ExitCode != nil {
		t.Fatalf("first revision %+v ok=%v", r, ok)
	}
	if r.Texts[Combined] != nil {
		t.Fatalf("first revision carries text %+v before any output", r.Texts[Combined])
	}
	if _, ok := c.Revision(); ok {
		t.Fatal("a revision without any change")
	}

	c.Apply(&Observation{Texts: []Text{{Kind: Delta, Text: "1\n"}}})
	c.Apply(&Observation{Texts: []Text{{Kind: Delta, Text: "2\n"}}})
	r, _ = c.Revision()
	if got := r.Texts[Combined]; got == nil || got.Text != "1\n2\n" || got.Replace || got.TotalBytes != 4 {
		t.Fatalf("live revision text %+v, want the two deltas appended", got)
	}
	if r.Number != 2 {
		t.Fatalf("revision %d, want 2", r.Number)
	}

	// A final aggregate that extends the live text: the ended revision
	// carries the whole text once.
	c.Apply(&Observation{Status: StatusCompleted, Exit: exit(0, ExitTerminal), Texts: []Text{{Kind: Final, Text: "1\n2\n3\n"}}})
	r, _ = c.Revision()
	got := r.Texts[Combined]
	if r.State != Ended || got == nil || got.Text != "1\n2\n3\n" || !got.Replace || got.TotalBytes != 6 {
		t.Fatalf("ended revision %+v text %+v", r, got)
	}
	if r.Texts[Stdout] != nil || r.Texts[Stderr] != nil {
		t.Fatal("streams that were never seen are set")
	}

	// A late frame with nothing new gives no revision; one with a new stream
	// gives another whole revision.
	c.Apply(&Observation{Status: StatusCompleted})
	if _, ok := c.Revision(); ok {
		t.Fatal("a revision for a late frame that changed nothing")
	}
	c.Apply(&Observation{Status: StatusCompleted, Texts: []Text{{Kind: Final, Text: "1\n2\n3\n"}}})
	if r, ok := c.Revision(); ok {
		t.Fatalf("a revision for a late frame that repeated the final text: %+v", r)
	}
	c.Apply(&Observation{Texts: []Text{{Stream: Stdout, Kind: Final, Text: "1\n2\n3\n"}}})
	r, ok = c.Revision()
	if !ok || r.Number != 4 || r.State != Ended || r.Texts[Stdout] == nil || r.Texts[Combined] == nil || !r.Texts[Combined].Replace {
		t.Fatalf("late stream revision %+v ok=%v", r, ok)
	}
}

func TestCallFinalWithoutOutputKeepsLiveText(t *testing.T) {
	c := NewCall("c1", 1024)
	c.Apply(&Observation{Shell: ShellYes, Texts: []Text{{Kind: Snapshot, Text: "partial\n"}}})
	c.Revision()
	c.Apply(&Observation{Status: StatusCompleted, Exit: exit(0, ExitStructured)})
	r, _ := c.Revision()
	if got := r.Texts[Combined]; got == nil || got.Text != "partial\n" {
		t.Fatalf("ended text %+v, want the live text kept", got)
	}
}

func TestCallShellness(t *testing.T) {
	c := NewCall("c1", 64)
	c.Apply(&Observation{Shell: ShellNo})
	if c.IsShell() || !c.NotShell() {
		t.Fatal("a read is a shell call")
	}
	c.Apply(&Observation{Shell: ShellYes})
	c.Apply(&Observation{Shell: ShellNo})
	if !c.IsShell() {
		t.Fatal("a call once shown to be a shell command stopped being one")
	}
}

func TestCallPermission(t *testing.T) {
	c := NewCall("c1", 64)
	c.Apply(&Observation{Shell: ShellYes, PermissionAsk: true, ApprovalReason: "Not in allowlist: node"})
	r, _ := c.Revision()
	if !r.Awaiting || r.ApprovalReason != "Not in allowlist: node" || r.State != Pending {
		t.Fatalf("ask revision %+v", r)
	}
	c.Answer(true)
	c.Apply(&Observation{Status: StatusFailed})
	r, _ = c.Revision()
	if r.Awaiting || r.Outcome != Cancelled {
		t.Fatalf("rejected call %+v", r)
	}
}

func ptr(v int32) *int32   { return &v }
func ptrBool(v bool) *bool { return &v }

// cancelRequestedTests are calls the user cancelled the turn of, before
// or after they ended (also replayed by the state tests).
var cancelRequestedTests = []struct {
	name     string
	before   []Observation // applied before the cancel
	after    []Observation // applied after the cancel
	end      bool          // the turn's result ends the call
	want     Outcome
	wantExit *int32
}{
	{name: "failed final with exit 1 keeps the 1",
		before: []Observation{{Shell: ShellYes, Status: StatusRunning}},
		after:  []Observation{{Status: StatusFailed, Exit: exit(1, ExitStructured)}},
		want:   Cancelled, wantExit: ptr(1)},
	{name: "failed final without exit",
		before: []Observation{{Shell: ShellYes, Status: StatusRunning}},
		after:  []Observation{{Status: StatusFailed}},
		want:   Cancelled},
	{name: "completed final with an abort notice",
		before: []Observation{{Shell: ShellYes, Status: StatusRunning}},
		after:  []Observation{{Status: StatusCompleted, Cancelled: true, CancelNotice: "User aborted the command"}},
		want:   Cancelled},
	// A bare completed says nothing of a cancel: an agent that let the
	// command run to its end after session/cancel (Droid before 0.117.0)
	// says just that, and the replay brings its exit 0.
	{name: "bare completed final is no cancel",
		before: []Observation{{Shell: ShellYes, Status: StatusRunning}},
		after:  []Observation{{Status: StatusCompleted}},
		want:   Unknown},
	{name: "bare completed final, then a replayed exit 0",
		before: []Observation{{Shell: ShellYes, Status: StatusRunning}},
		after:  []Observation{{Status: StatusCompleted}, {Exit: exit(0, ExitText), Replayed: true}},
		want:   Succeeded, wantExit: ptr(0)},
	{name: "completed final with a signal exit code",
		before: []Observation{{Shell: ShellYes, Status: StatusRunning}},
		after:  []Observation{{Status: StatusCompleted, Exit: exit(137, ExitStructured)}},
		want:   Cancelled, wantExit: ptr(137)},
	{name: "no final before the turn's result",
		before: []Observation{{Shell: ShellYes, Status: StatusRunning}},
		end:    true,
		want:   Cancelled},
	{name: "a clean exit 0 under completed finished before the cancel took hold",
		before: []Observation{{Shell: ShellYes, Status: StatusRunning}},
		after:  []Observation{{Status: StatusCompleted, Exit: exit(0, ExitTerminal)}},
		want:   Succeeded, wantExit: ptr(0)},
	{name: "a call that ended before the cancel keeps its outcome",
		before: []Observation{{Shell: ShellYes, Status: StatusRunning}, {Status: StatusFailed, Exit: exit(2, ExitTerminal)}},
		end:    true,
		want:   Failed, wantExit: ptr(2)},
}

// TestCallCancelRequested: once the user cancelled the turn, a call that
// ends (a failed final, a completed final with an abort notice or an
// exit that is not clean, or no final before the turn's result) ended
// because of that cancel, keeping a known exit code. A bare completed
// final is no cancel, and a call that ended before the cancel keeps its
// outcome.
func TestCallCancelRequested(t *testing.T) {
	for _, tt := range cancelRequestedTests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCall("c1", 1024)
			for i := range tt.before {
				c.Apply(&tt.before[i])
			}
			c.CancelRequested()
			for i := range tt.after {
				c.Apply(&tt.after[i])
			}
			if tt.end {
				c.End(true, "the prompt turn ended")
			}
			r, ok := c.Revision()
			if !ok || r.State != Ended || r.Outcome != tt.want {
				t.Fatalf("state %v outcome %v (%s), want ended %v", r.State, r.Outcome, r.OutcomeReason, tt.want)
			}
			switch {
			case tt.wantExit == nil && r.ExitCode != nil:
				t.Errorf("exit %d, want unknown", *r.ExitCode)
			case tt.wantExit != nil && (r.ExitCode == nil || *r.ExitCode != *tt.wantExit):
				t.Errorf("exit %v, want %d", r.ExitCode, *tt.wantExit)
			}
		})
	}
}

// TestCallLateOutputAfterCancel: output that arrives for a cancelled call
// after it ended never reopens it nor changes its outcome, and a late
// final status or exit code does not either.
func TestCallLateOutputAfterCancel(t *testing.T) {
	c := NewCall("c1", 1024)
	c.Apply(&Observation{Shell: ShellYes, Status: StatusRunning, Texts: []Text{{Kind: Delta, Text: "tick1\n"}}})
	c.CancelRequested()
	c.End(true, "the prompt turn ended")
	r, _ := c.Revision()
	if r.State != Ended || r.Outcome != Cancelled {
		t.Fatalf("cancelled call %+v", r)
	}
	for _, o := range []Observation{
		{Texts: []Text{{Kind: Delta, Text: "tick2\n"}}},
		{Status: StatusRunning, Texts: []Text{{Kind: Delta, Text: "tick3\n"}}},
		{Status: StatusCompleted, Exit: exit(0, ExitTerminal)},
	} {
		c.Apply(&o)
		if r, ok := c.Revision(); ok && (r.State != Ended || r.Outcome != Cancelled) {
			t.Fatalf("late frame changed the call: %+v", r)
		}
	}
}

// TestCallNeverWorse: a later frame never makes what is known worse. A
// permission ask's command (Codex TS 2.x re-quotes it as one shell word)
// does not replace the command a tool_call already gave, but fills in one
// that is unknown.
func TestCallNeverWorse(t *testing.T) {
	c := NewCall("c1", 1024)
	c.Apply(&Observation{Opens: true, Shell: ShellYes, Command: "printf 'x'; ls", Status: StatusRunning})
	c.Apply(&Observation{PermissionAsk: true, Command: `"printf 'x'"'; ls'`, ApprovalReason: "escalate"})
	r, _ := c.Revision()
	if r.Command != "printf 'x'; ls" || r.ApprovalReason != "escalate" {
		t.Fatalf("ask made the command worse: %+v", r)
	}
	d := NewCall("d1", 1024)
	d.Apply(&Observation{PermissionAsk: true, Shell: ShellYes, Command: "make"})
	d.Apply(&Observation{Opens: true, Command: "make all"})
	if r, _ := d.Revision(); r.Command != "make all" {
		t.Fatalf("command %q after ask then tool_call", r.Command)
	}
}

// revisionAfter is the revision of a new call (limit 1024) after obs, in
// order.
func revisionAfter(obs []Observation) Revision {
	c := NewCall("c", 1024)
	for i := range obs {
		c.Apply(&obs[i])
	}
	r, _ := c.Revision()
	return r
}

// TestCallTitleCommandGivesWay: a command read from a title names the call
// only until a frame that says the command itself: a permission ask's
// rawInput (which never replaces a command a non-title frame named) does
// replace it, and no later title does.
func TestCallTitleCommandGivesWay(t *testing.T) {
	c := NewCall("c1", 1024)
	c.Apply(&Observation{Opens: true, Shell: ShellYes, Command: "Run shell command", CommandFromTitle: true, Status: StatusPending})
	c.Apply(&Observation{PermissionAsk: true, Command: "printf 'a'; exit 3"})
	assert.Equal(t, "printf 'a'; exit 3", c.Command(), "the ask's command replaces the title's")
	c.Apply(&Observation{Command: "printf 'a'; exit", CommandFromTitle: true})
	assert.Equal(t, "printf 'a'; exit 3", c.Command(), "a title never replaces a command")
	c.Apply(&Observation{PermissionAsk: true, Command: `"printf 'a'; exit 3"`})
	assert.Equal(t, "printf 'a'; exit 3", c.Command(), "an ask never replaces an ask's command")

	// The mark survives a round trip through the stored state.
	d := NewCall("d1", 1024)
	d.Apply(&Observation{Opens: true, Shell: ShellYes, Command: "Shell", CommandFromTitle: true})
	e, err := RestoreCall(d.AppendState(nil), [NumStreams][]byte{})
	require.NoError(t, err)
	e.Apply(&Observation{PermissionAsk: true, Command: "make"})
	assert.Equal(t, "make", e.Command())
}

// TestCallStreamOmittedKeepsItsText: each present stream of a split
// output is a snapshot of that stream; an omitted one keeps its text, and
// a lone stream never creates a split the agent did not show.
func TestCallStreamOmittedKeepsItsText(t *testing.T) {
	c := NewCall("c1", 1024)
	c.Apply(&Observation{Shell: ShellYes, Texts: []Text{{Stream: Stdout, Kind: Snapshot, Text: "o1\n"}, {Stream: Stderr, Kind: Snapshot, Text: "e1\n"}}})
	c.Apply(&Observation{Status: StatusCompleted, Texts: []Text{{Stream: Stdout, Kind: Final, Text: "o1\no2\n", IfSplit: true}}})
	r, _ := c.Revision()
	if r.Texts[Stdout] == nil || r.Texts[Stdout].Text != "o1\no2\n" || r.Texts[Stderr] == nil || r.Texts[Stderr].Text != "e1\n" {
		t.Fatalf("streams %+v %+v", r.Texts[Stdout], r.Texts[Stderr])
	}
	d := NewCall("d1", 1024)
	d.Apply(&Observation{Shell: ShellYes, Status: StatusCompleted, Texts: []Text{{Stream: Stdout, Kind: Final, Text: "o\n", IfSplit: true}}})
	if r, _ := d.Revision(); r.Texts[Stdout] != nil {
		t.Fatalf("a lone stream made a split: %+v", r.Texts[Stdout])
	}
}

// TestCallKnownOutcomeIsFinal: once a call ended with a known outcome, late
// exit codes, signals, failures and rejections change nothing about how it
// ended; late output still joins it.
func TestCallKnownOutcomeIsFinal(t *testing.T) {
	c := NewCall("c1", 1024)
	c.Apply(&Observation{Shell: ShellYes, Status: StatusCompleted, Exit: exit(0, ExitTerminal)})
	if r, _ := c.Revision(); r.Outcome != Succeeded {
		t.Fatalf("ended %+v", r)
	}
	for _, o := range []Observation{
		{Status: StatusFailed, Exit: exit(1, ExitTerminal)},
		{Signal: "SIGKILL", TimedOut: true, Failed: true},
		{Cancelled: true},
	} {
		c.Apply(&o)
	}
	c.Answer(true)
	c.Apply(&Observation{Texts: []Text{{Kind: Delta, Text: "late"}}})
	r, ok := c.Revision()
	if !ok || r.Outcome != Succeeded || r.ExitCode == nil || *r.ExitCode != 0 || r.Signal != "" || r.TimedOut || r.Texts[Combined].Text != "late" {
		t.Fatalf("late evidence changed a known outcome: %+v ok=%v", r, ok)
	}
}

// TestCallEndedByItsAgentKeepsWhatItSaid: once the agent itself ended a
// call (its completed or failed final), a later frame (a hostile client's,
// or an agent's stray one within the grace period) may still add output,
// but never renames the command that ran nor replaces the final output
// with a text that does not extend it. A call the turn ended is not the
// agent's word: a late final still replaces its live text, and a command
// still unknown is filled in.
func TestCallEndedByItsAgentKeepsWhatItSaid(t *testing.T) {
	c := NewCall("c1", 1024)
	c.Apply(&Observation{Opens: true, Shell: ShellYes, Command: "false3", Status: StatusRunning})
	c.Apply(&Observation{Status: StatusCompleted, Exit: exit(3, ExitStructured), Texts: []Text{{Kind: Final, Text: "first\n"}}})
	c.Revision()
	for _, o := range []Observation{
		{Status: StatusRunning, Texts: []Text{{Kind: Snapshot, Text: "late\n"}}},
		{Opens: true, Shell: ShellYes, Command: "rm -rf /", Status: StatusPending},
		{Status: StatusCompleted, Exit: exit(0, ExitStructured), Texts: []Text{{Kind: Final, Text: "other\n"}}},
	} {
		c.Apply(&o)
	}
	r, ok := c.Revision()
	assert.False(t, ok, "frames that add nothing made a revision: %+v", r)

	// What extends the final still joins it, as a late delta does.
	c.Apply(&Observation{Status: StatusRunning, Texts: []Text{{Kind: Snapshot, Text: "first\nsecond\n"}}})
	c.Apply(&Observation{Texts: []Text{{Kind: Delta, Text: "third\n"}}})
	r, _ = c.Revision()
	assert.Equal(t, Ended, r.State)
	assert.Equal(t, Failed, r.Outcome)
	assert.Equal(t, "false3", r.Command)
	require.NotNil(t, r.Texts[Combined])
	assert.Equal(t, "first\nsecond\nthird\n", r.Texts[Combined].Text)
	// The command that ran, said late, is still the strongest source.
	c.Apply(&Observation{Command: "false 3", CommandRan: true})
	r, _ = c.Revision()
	assert.Equal(t, "false 3", r.Command)

	d := NewCall("d1", 1024)
	d.Apply(&Observation{Opens: true, Shell: ShellYes, Status: StatusRunning, Texts: []Text{{Kind: Delta, Text: "tail of it\n"}}})
	d.End(false, "the prompt turn ended while the call was still open")
	d.Apply(&Observation{Command: "make", Status: StatusCompleted, Exit: exit(0, ExitStructured), Texts: []Text{{Kind: Final, Text: "all of it\n"}}})
	r, _ = d.Revision()
	assert.Equal(t, "make", r.Command)
	assert.Equal(t, "all of it\n", r.Texts[Combined].Text)

	// Nor is the end of a tool call whose command goes on in the
	// background, said with the end or after it.
	e := NewCall("e1", 1024)
	e.Apply(&Observation{Opens: true, Shell: ShellYes, Command: "serve", Status: StatusCompleted, Texts: []Text{{Kind: Final, Text: "started\n"}}})
	e.Apply(&Observation{Background: true, Texts: []Text{{Kind: Window, Text: "listening\n"}}})
	r, _ = e.Revision()
	assert.Equal(t, "listening\n", r.Texts[Combined].Text)
}

// TestCallKnownOutcomeLearnsExit: a known outcome may learn its unknown
// exit code, but a success never takes a nonzero one.
func TestCallKnownOutcomeLearnsExit(t *testing.T) {
	failed := NewCall("f", 1024)
	failed.Apply(&Observation{Shell: ShellYes, Status: StatusFailed})
	failed.Apply(&Observation{Exit: exit(2, ExitTerminal)})
	if r, _ := failed.Revision(); r.Outcome != Failed || r.ExitCode == nil || *r.ExitCode != 2 {
		t.Fatalf("failed call did not learn its exit: %+v", r)
	}
	proved := NewCall("p", 1024)
	proved.Apply(&Observation{Shell: ShellYes, Status: StatusCompleted, Succeeded: true})
	proved.Apply(&Observation{Exit: exit(1, ExitTerminal)})
	if r, _ := proved.Revision(); r.Outcome != Succeeded || r.ExitCode != nil {
		t.Fatalf("a success took a nonzero exit: %+v", r)
	}
}

// TestCallFailedLearnsALateZero: a call the agent reported failed without
// an exit code stays FAILED when an exit code 0 comes after its end, and
// its reason no longer says that no exit code came: it says the 0 came
// late (it said "and sent no exit code" next to exit_code 0).
func TestCallFailedLearnsALateZero(t *testing.T) {
	for _, tt := range []struct {
		name string
		obs  Observation
		want string
	}{
		{"failed status", Observation{Status: StatusFailed},
			"the agent said failed; exit code 0 came after the call ended"},
		{"failure reported", Observation{Status: StatusFailed, Failed: true, FailNotice: "Command not executed."},
			"the agent reported a failure; exit code 0 came after the call ended; the agent said: Command not executed."},
		{"exit set aside", Observation{Status: StatusFailed, ExitSetAside: true},
			"the agent said failed; exit code 0 came after the call ended"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCall("c1", 1024)
			c.Apply(&Observation{Opens: true, Shell: ShellYes, Command: "ls", Status: StatusRunning})
			c.Apply(&tt.obs)
			r, ok := c.Revision()
			require.True(t, ok)
			require.Equal(t, Failed, r.Outcome)
			require.Nil(t, r.ExitCode)
			c.Apply(&Observation{Exit: exit(0, ExitTerminal)})
			r, ok = c.Revision()
			require.True(t, ok)
			assert.Equal(t, Failed, r.Outcome, "a known outcome is final")
			require.NotNil(t, r.ExitCode)
			assert.EqualValues(t, 0, *r.ExitCode)
			assert.Equal(t, tt.want, r.OutcomeReason)
		})
	}
}

// TestCallFailNotice: the agent's words about a failure it reports
// without an exit code are quoted in the outcome reason, never output; a
// notice on a frame that reports no failure is not a reason.
func TestCallFailNotice(t *testing.T) {
	tests := []struct {
		name string
		obs  Observation
		want string
	}{
		{"failed", Observation{Status: StatusFailed, Failed: true, FailNotice: "Command not executed."},
			"the agent reported a failure without an exit code; the agent said: Command not executed."},
		{"failed verdict", Observation{Status: StatusCompleted, Verdict: VerdictFailed, FailNotice: "aborted"},
			"the agent's result says the command failed; the agent said: aborted"},
		{"no failure reported", Observation{Status: StatusFailed, FailNotice: "ignored"},
			"the agent said failed and sent no exit code"},
		{"an exit code says more", Observation{Status: StatusCompleted, Failed: true, FailNotice: "n", Exit: &Exit{Code: 3, Source: ExitText}},
			"exit code 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCall("c1", 1024)
			c.Apply(&Observation{Shell: ShellYes, Command: "kill 1"})
			c.Apply(&tt.obs)
			r, ok := c.Revision()
			require.True(t, ok)
			assert.Equal(t, Failed, r.Outcome)
			assert.Equal(t, tt.want, r.OutcomeReason)
			assert.Nil(t, r.Texts[Combined])
		})
	}
}

// TestBackgroundEndIsUnknownUntilItsResult: a tool call that ends while
// its command goes on in the background is UNKNOWN, and says so; a later
// exit code resolves it.
func TestBackgroundEndIsUnknownUntilItsResult(t *testing.T) {
	c := NewCall("b1", 1<<10)
	c.Apply(&Observation{Shell: ShellYes, Command: "sleep 6", Status: StatusRunning})
	c.Apply(&Observation{Status: StatusCompleted, Background: true})
	r, ok := c.Revision()
	require.True(t, ok)
	assert.Equal(t, Unknown, r.Outcome)
	assert.Equal(t, "the command went on in the background; how it ends is not known", r.OutcomeReason)
	assert.True(t, r.Background)

	c.Apply(&Observation{Exit: &Exit{Code: 0, Source: ExitStructured}})
	r, ok = c.Revision()
	require.True(t, ok)
	assert.Equal(t, Succeeded, r.Outcome)
	require.NotNil(t, r.ExitCode)
	assert.Equal(t, int32(0), *r.ExitCode)
}

// TestBackgroundEndSaysNoExit: the frame that ends a tool call whose
// command went on in the background cannot know how the command ends: an
// exit code 0 on it is the tool call's (an agent that restates a result
// fills in 0 for every success), not the command's. Whether the call
// learned of the background earlier or on that frame, and whether the
// frame is live or a replay of a call that ended: UNKNOWN, no exit code.
// A later frame's exit code is still the command's.
func TestBackgroundEndSaysNoExit(t *testing.T) {
	bg := Observation{Shell: ShellYes, Background: true}
	end0 := Observation{Status: StatusCompleted, Exit: exit(0, ExitTerminal)}
	for _, tc := range []struct {
		name string
		obs  []Observation
	}{
		{"the notice, then the end with 0", []Observation{bg, end0}},
		{"the notice on the end with 0", []Observation{{Shell: ShellYes, Background: true, Status: StatusCompleted, Exit: exit(0, ExitTerminal)}}},
		{"ended live, a replay's end with 0", []Observation{bg, {Status: StatusCompleted}, {Status: StatusCompleted, Exit: exit(0, ExitTerminal), Replayed: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := revisionAfter(tc.obs)
			assert.Equal(t, Unknown, r.Outcome, r.OutcomeReason)
			assert.Nil(t, r.ExitCode)
			assert.True(t, r.Background)
		})
	}
	c := NewCall("b", 1024)
	for _, o := range []Observation{bg, {Status: StatusCompleted}, {Exit: exit(3, ExitTerminal)}} {
		c.Apply(&o)
	}
	r, _ := c.Revision()
	assert.Equal(t, Failed, r.Outcome, "a later frame's exit code is the command's")
}

// TestReplayNeverSendsAnEndedCallToTheBackground: a replay (session/load)
// restates a call that ended live, often in a poorer shape: it cannot
// make a command that ended in the foreground a background one, whether
// its notice is words the live text held whole (the command printed
// them) or not. A call that only the replay shows still learns it.
func TestReplayNeverSendsAnEndedCallToTheBackground(t *testing.T) {
	const note = "Command running in background with ID: abc123."
	live := []Observation{
		{Shell: ShellYes, Texts: []Text{{Stream: Combined, Kind: Snapshot, Text: note}}},
		{Status: StatusCompleted},
	}
	worded := Observation{Status: StatusCompleted, Background: true, Worded: Worded{Background: true},
		Texts: []Text{{Stream: Combined, Kind: Final, Whole: note}}, Replayed: true}
	bare := Observation{Status: StatusCompleted, Background: true, Replayed: true}
	for _, tc := range []struct {
		name string
		obs  []Observation
		bg   bool
	}{
		{"the live text held the words whole", append(slices.Clone(live), worded), false},
		{"ended live without them", []Observation{{Shell: ShellYes}, {Status: StatusCompleted}, bare}, false},
		{"only the replay shows the call", []Observation{{Shell: ShellYes, Replayed: true}, bare}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := revisionAfter(tc.obs)
			assert.Equal(t, tc.bg, r.Background, r.OutcomeReason)
		})
	}
}

// TestCallExitSetAside: a call whose agent sent an exit code the dialect
// does not take as the command's (ExitSetAside) says so in its outcome
// reason when no other exit is known, rather than that none was sent; it
// is no exit code; a real exit code still wins; and it survives the
// call's encoded state.
func TestCallExitSetAside(t *testing.T) {
	const aside = "; the exit code it sent is not the command's and was set aside"
	tests := []struct {
		name    string
		obs     []Observation
		outcome Outcome
		reason  string
		exit    *int32
	}{
		{"completed", []Observation{{Status: StatusCompleted, ExitSetAside: true}},
			Unknown, "the agent said completed" + aside, nil},
		{"failed", []Observation{{Status: StatusFailed, ExitSetAside: true}},
			Failed, "the agent said failed" + aside, nil},
		{"set aside on an earlier frame", []Observation{{ExitSetAside: true}, {Status: StatusCompleted}},
			Unknown, "the agent said completed" + aside, nil},
		{"a real exit code wins", []Observation{{Status: StatusCompleted, ExitSetAside: true, Exit: &Exit{Code: 0, Source: ExitText}}},
			Succeeded, "exit code 0", ptr(int32(0))},
		{"nothing set aside", []Observation{{Status: StatusCompleted}},
			Unknown, "the agent said completed but sent no exit code", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCall("c1", 1024)
			c.Apply(&Observation{Shell: ShellYes, Command: "true"})
			for i := range tt.obs {
				if i == len(tt.obs)-1 {
					// The state goes through its encoding before the end.
					again, err := RestoreCall(c.AppendState(nil), [NumStreams][]byte{})
					require.NoError(t, err)
					c = again
				}
				c.Apply(&tt.obs[i])
			}
			r, ok := c.Revision()
			require.True(t, ok)
			assert.Equal(t, tt.outcome, r.Outcome)
			assert.Equal(t, tt.reason, r.OutcomeReason)
			assert.Equal(t, tt.exit, r.ExitCode)
		})
	}
}

// TestCallWordsThatWereOutput: words a dialect removed from a text as the
// agent's own (Text.Whole, Observation.Worded) are output when the stream
// already holds exactly the whole text, and then say nothing of how the
// command ended; otherwise they stay out, and a text that was only words
// changes nothing.
func TestCallWordsThatWereOutput(t *testing.T) {
	const whole = "Exit code 1\nreal"
	header := Observation{Shell: ShellYes, Exit: exit(1, ExitText), Worded: Worded{Exit: true},
		Texts: []Text{{Stream: Combined, Kind: Snapshot, Text: "real", Whole: whole}}}
	refusal := Observation{Shell: ShellYes, Cancelled: true, CancelNotice: "User refused", Worded: Worded{Cancelled: true},
		Texts: []Text{{Stream: Combined, Kind: Snapshot, Whole: "User refused"}}}
	timeout := Observation{Shell: ShellYes, TimedOut: true, Worded: Worded{TimedOut: true},
		Texts: []Text{{Stream: Combined, Kind: Snapshot, Text: "step 1\n", Whole: "step 1\nCommand timed out"}}}
	held := func(s string) Observation {
		return Observation{Shell: ShellYes, Texts: []Text{{Stream: Combined, Kind: Snapshot, Text: s}}}
	}
	done := Observation{Status: StatusCompleted, Exit: exit(0, ExitTerminal)}
	for _, tc := range []struct {
		name    string
		obs     []Observation
		want    Outcome
		output  string
		exit    *int32
		timeout bool
	}{
		{"held whole: the header is output", []Observation{held(whole), header, done}, Succeeded, whole, ptr(0), false},
		{"not held: the header is the exit", []Observation{header, {Status: StatusFailed}}, Failed, "real", ptr(1), false},
		{"held otherwise: the header is the exit", []Observation{held("other"), header, {Status: StatusFailed}}, Failed, "real", ptr(1), false},
		{"held whole: the refusal is output", []Observation{held("User refused"), refusal, done}, Succeeded, "User refused", ptr(0), false},
		{"not held: a refusal alone keeps the output", []Observation{held("partial"), refusal, {Status: StatusFailed}}, Cancelled, "partial", nil, false},
		{"held whole: the timeout line is output", []Observation{held("step 1\nCommand timed out"), timeout, done}, Succeeded, "step 1\nCommand timed out", ptr(0), false},
		{"not held: the timeout line is a notice", []Observation{timeout, {Status: StatusFailed}}, Failed, "step 1\n", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCall("c", 1024)
			for i := range tc.obs {
				c.Apply(&tc.obs[i])
			}
			r, _ := c.Revision()
			assert.Equal(t, tc.want, r.Outcome, r.OutcomeReason)
			assert.Equal(t, tc.exit, r.ExitCode)
			assert.Equal(t, tc.timeout, r.TimedOut)
			w := c.streams[Combined].Whole()
			assert.Equal(t, tc.output, w.Text)
		})
	}
	// The observation itself is left as it was.
	assert.Equal(t, "real", header.Texts[0].Text)
	assert.NotNil(t, header.Exit)
}

// TestCallExitWordsOutput: an exit code read from words the dialect
// removed (an "Exit code N" header on a frame without a status) is
// dropped when a later frame says the agent wrote no such line
// (ExitWordsOutput: it ends the call as one not flagged as failed), and
// the text applies whole again when the stream holds what was left of
// it. A session/load replay seen alone sends the header-like first line
// of a success so, with no earlier copy of the output to prove it.
func TestCallExitWordsOutput(t *testing.T) {
	const whole = "Exit code 3\nreal"
	header := func() Observation {
		return Observation{Shell: ShellYes, Exit: exit(3, ExitText), Worded: Worded{Exit: true},
			Texts: []Text{{Stream: Combined, Kind: Snapshot, Text: "real", Whole: whole}}}
	}
	headerAndNotice := func() Observation {
		o := header()
		o.Worded.Background = true
		return o
	}
	noFailure := Observation{Status: StatusCompleted, ExitWordsOutput: true, ExitSetAside: true}
	for _, tc := range []struct {
		name    string
		obs     []Observation
		outcome Outcome
		exit    *int32
		output  string
	}{
		{"the final says no failure: the line is output, no exit", []Observation{header(), noFailure}, Unknown, nil, whole},
		{"replayed, the same", []Observation{replayedObs(header()), replayedObs(noFailure)}, Unknown, nil, whole},
		{"the final says failed: the header is the exit", []Observation{header(), {Status: StatusFailed}}, Failed, ptr(3), "real"},
		{"a stronger exit stands, and the line is output", []Observation{header(), {Status: StatusCompleted, ExitWordsOutput: true, Exit: exit(0, ExitTerminal)}}, Succeeded, ptr(0), whole},
		{"other words removed too: the exit goes, the text stays", []Observation{headerAndNotice(), noFailure}, Unknown, nil, "real"},
		{"the stream changed since: the exit goes, the text stays", []Observation{header(), {Texts: []Text{{Stream: Combined, Kind: Snapshot, Text: "real\nmore"}}}, noFailure}, Unknown, nil, "real\nmore"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCall("c", 1024)
			for i := range tc.obs {
				c.Apply(&tc.obs[i])
			}
			r, _ := c.Revision()
			assert.Equal(t, tc.outcome, r.Outcome, r.OutcomeReason)
			assert.Equal(t, tc.exit, r.ExitCode)
			assert.Equal(t, tc.output, c.streams[Combined].Whole().Text)
		})
	}
}

// TestCallExitWordsOutputRestored: what the call keeps of removed exit
// words survives AppendState and RestoreCall, so a session that another
// replica continues (or that is loaded again from the store) between the
// header and the final still puts the line back. The words alone are
// stored, not the text they were removed from.
func TestCallExitWordsOutputRestored(t *testing.T) {
	for _, tc := range []struct {
		name, whole, left string
		output            string
	}{
		{"a header", "Exit code 3\nreal", "real", "Exit code 3\nreal"},
		{"a trailer", "real\nexit status 3", "real", "real\nexit status 3"},
		{"words alone", "Exit code 3", "", "Exit code 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCall("c", 1024)
			c.Apply(&Observation{Shell: ShellYes, Exit: exit(3, ExitText), Worded: Worded{Exit: true},
				Texts: []Text{{Stream: Combined, Kind: Snapshot, Text: tc.left, Whole: tc.whole}}})
			var st simStore
			state := saveCall(t, c, &st, false)
			if tc.left != "" {
				assert.NotContains(t, string(state), tc.whole, "the state holds the words, not the text")
			}
			r := restoreCall(t, c, state, &st)
			r.Apply(&Observation{Status: StatusCompleted, ExitWordsOutput: true, ExitSetAside: true})
			rev, _ := r.Revision()
			assert.Equal(t, Unknown, rev.Outcome, rev.OutcomeReason)
			assert.Nil(t, rev.ExitCode)
			out := ""
			if b := r.streams[Combined]; b != nil {
				out = b.Whole().Text
			}
			assert.Equal(t, tc.output, out)
		})
	}
}

// TestCallWordedExitStateRestores: a worded exit beside a text too long
// to put the words back over still stores a state RestoreCall reads.
func TestCallWordedExitStateRestores(t *testing.T) {
	big := strings.Repeat("x", MaxStateLimit+1)
	c := NewCall("c", 1024)
	c.wordedExit = newWordedExit(3, &Text{Stream: Combined, Text: big}, "Exit code 3\n"+big, true)
	_, err := RestoreCall(c.AppendState(nil), simStore{})
	require.NoError(t, err)
}

func replayedObs(o Observation) Observation {
	o.Replayed = true
	return o
}

// TestCallWordsIfFailed: words removed from a frame that does not end the
// call (Observation.WordsIfFailed) wait for the agent's final: `completed`
// makes them output, with nothing read from them; `failed` makes them the
// agent's, and so does an end with no final, but for a text read as the
// agent's error message and nothing more, which is then output (nothing
// said the command did not run). A call stored and restored while it
// holds them reads the same.
func TestCallWordsIfFailed(t *testing.T) {
	refusal := Observation{Shell: ShellYes, Cancelled: true, CancelNotice: "User refused", Worded: Worded{Cancelled: true}, WordsIfFailed: true,
		Texts: []Text{{Stream: Combined, Kind: Snapshot, Whole: "User refused"}}}
	timeout := Observation{Shell: ShellYes, TimedOut: true, Worded: Worded{TimedOut: true}, WordsIfFailed: true,
		Texts: []Text{{Stream: Combined, Kind: Snapshot, Text: "step 1\n", Whole: "step 1\nCommand timed out"}}}
	// A line the dialect reads as the agent's error message only if the
	// call ends failed: a failure said by nothing but the text's shape.
	message := Observation{Shell: ShellYes, Failed: true, FailNotice: "/home/dev/sub", Worded: Worded{Failed: true}, WordsIfFailed: true,
		Texts: []Text{{Stream: Combined, Kind: Snapshot, Whole: "/home/dev/sub\n"}}}
	held := func(s string) Observation {
		return Observation{Shell: ShellYes, Texts: []Text{{Stream: Combined, Kind: Snapshot, Text: s}}}
	}
	completed, failed := Observation{Status: StatusCompleted}, Observation{Status: StatusFailed}
	for _, tc := range []struct {
		name    string
		obs     []Observation
		end     bool // the turn ends the call, with no final
		want    Outcome
		output  string
		timeout bool
	}{
		{"completed: the refusal is output", []Observation{refusal, completed}, false, Unknown, "User refused", false},
		{"failed: the refusal is the agent's", []Observation{refusal, failed}, false, Cancelled, "", false},
		{"no final: the refusal is the agent's", []Observation{refusal}, true, Cancelled, "", false},
		{"completed: the error message is output", []Observation{message, completed}, false, Unknown, "/home/dev/sub\n", false},
		{"failed: the error message is the agent's", []Observation{message, failed}, false, Failed, "", false},
		{"no final: the error message is output", []Observation{message}, true, Unknown, "/home/dev/sub\n", false},
		{"completed: the timeout line is output", []Observation{timeout, completed}, false, Unknown, "step 1\nCommand timed out", false},
		{"failed: the timeout line is a notice, the rest output", []Observation{timeout, failed}, false, Failed, "step 1\n", true},
		{"held whole already: output at once", []Observation{held("User refused"), refusal, failed}, false, Failed, "User refused", false},
		{"the final's own text comes after", []Observation{refusal, {Status: StatusCompleted, Texts: []Text{final("User refused\nmore")}}}, false, Unknown, "User refused\nmore", false},
	} {
		for _, restore := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, restored %v", tc.name, restore), func(t *testing.T) {
				c := NewCall("c", 1024)
				for i := range tc.obs {
					if restore && i == len(tc.obs)-1 {
						st := &simStore{}
						state := saveCall(t, c, st, true)
						c = restoreCall(t, c, state, st)
					}
					c.Apply(&tc.obs[i])
				}
				if tc.end {
					c.End(false, "the turn ended")
				}
				r, _ := c.Revision()
				assert.Equal(t, tc.want, r.Outcome, r.OutcomeReason)
				assert.Equal(t, tc.timeout, r.TimedOut)
				got := ""
				if b := c.streams[Combined]; b != nil {
					got = b.Whole().Text
				}
				assert.Equal(t, tc.output, got)
			})
		}
	}
}

// TestCallWordsIfCancelAsked: words removed from a final that are the
// agent's only after the user's cancel (Observation.WordsIfCancelAsked)
// are output when no cancel was asked while the call was open, and the
// agent's notice when one was; a replayed final is read as the agent's.
func TestCallWordsIfCancelAsked(t *testing.T) {
	notice := func(text, whole string) Observation {
		return Observation{Status: StatusCompleted, Cancelled: true, CancelNotice: "Command cancelled by user.", Worded: Worded{Cancelled: true},
			WordsIfCancelAsked: true, Texts: []Text{{Stream: Combined, Kind: Final, Text: text, Whole: whole}}}
	}
	alone := notice("", "Command cancelled by user.")
	before := notice("tick1", "Command cancelled by user.\n\nOutput before cancellation:\ntick1")
	replayed := alone
	replayed.Replayed = true
	for _, tc := range []struct {
		name   string
		cancel bool
		final  Observation
		want   Outcome
		output string
	}{
		{"no cancel: the notice alone is output", false, alone, Unknown, "Command cancelled by user."},
		{"no cancel: all of it is output", false, before, Unknown, "Command cancelled by user.\n\nOutput before cancellation:\ntick1"},
		{"cancel asked: the notice is the agent's", true, alone, Cancelled, ""},
		{"cancel asked: the output after the marker", true, before, Cancelled, "tick1"},
		{"replayed: the agent's", false, replayed, Cancelled, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCall("c", 1024)
			c.Apply(&Observation{Shell: ShellYes, Replayed: tc.final.Replayed})
			if tc.cancel {
				c.CancelRequested()
			}
			c.Apply(&tc.final)
			r, _ := c.Revision()
			assert.Equal(t, tc.want, r.Outcome, r.OutcomeReason)
			got := ""
			if b := c.streams[Combined]; b != nil {
				got = b.Whole().Text
			}
			assert.Equal(t, tc.output, got)
		})
	}
}

// TestReplayDropsALiveOnlyExit: an exit a dialect says is evidence only on
// a live frame (ExitLiveOnly: the agent makes it up when it replays) says
// nothing on a replayed one, whether the call ended live without an exit
// code or only the replay shows it; live, it is the exit, and a replayed
// exit without the mark still fills in what the call lacks.
func TestReplayDropsALiveOnlyExit(t *testing.T) {
	liveOnly := Observation{Exit: exit(0, ExitStatus), ExitLiveOnly: true}
	replayed := liveOnly
	replayed.Replayed = true
	plain := Observation{Exit: exit(0, ExitStatus), Replayed: true}
	for _, tc := range []struct {
		name    string
		obs     []Observation
		outcome Outcome
		exit    *int32
	}{
		{"ended live without an exit code", []Observation{{Shell: ShellYes}, {Status: StatusCompleted}, replayed, {Status: StatusCompleted, Replayed: true}}, Unknown, nil},
		{"only the replay shows the call", []Observation{{Shell: ShellYes, Replayed: true}, replayed, {Status: StatusCompleted, Replayed: true}}, Unknown, nil},
		{"live, it is the exit", []Observation{{Shell: ShellYes}, liveOnly, {Status: StatusCompleted}}, Succeeded, ptr(0)},
		{"a replayed exit without the mark fills in", []Observation{{Shell: ShellYes}, {Status: StatusCompleted}, plain}, Succeeded, ptr(0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := revisionAfter(tc.obs)
			assert.Equal(t, tc.outcome, r.Outcome, r.OutcomeReason)
			assert.Equal(t, tc.exit, r.ExitCode)
		})
	}
}
