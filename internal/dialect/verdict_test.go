package dialect

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/acpnorm/acpnorm/internal/jsonlit"
	"github.com/stretchr/testify/require"
)

func TestReadSignal(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Signal
	}{
		{`9`, Signal{Name: "SIGKILL"}},
		{`15`, Signal{Name: "SIGTERM"}},
		{`"9"`, Signal{Name: "SIGKILL"}},
		{`9.0`, Signal{Name: "SIGKILL"}},
		{`"SIGTERM"`, Signal{Name: "SIGTERM"}},
		{`"kill"`, Signal{Name: "SIGKILL"}},
		{`64`, Signal{Name: "SIG64"}},
		{`null`, Signal{}},
		{`0`, Signal{}},
		{`"0"`, Signal{}},
		{`""`, Signal{}},
		{`"none"`, Signal{}},
		{`"(none)"`, Signal{}},
		{`false`, Signal{}},
		{`true`, Signal{}},
		{`-9`, Signal{Odd: true}},
		{`9.5`, Signal{Odd: true}},
		{`1e-400`, Signal{Odd: true}}, // not 0: not whole, however a float rounds it
		{`9.0000000000000000001`, Signal{Odd: true}},
		{`"0x1p3"`, Signal{Odd: true}},
		{`0e5`, Signal{}},
		{`9e0`, Signal{Name: "SIGKILL"}},
		{`"\u00a09"`, Signal{Odd: true}}, // padded with other white space: not a signal written
		{`" 9 "`, Signal{Name: "SIGKILL"}},
		{`{"n":9}`, Signal{Odd: true}},
		{`"killed by the kernel"`, Signal{Odd: true}},
	} {
		if got := readSignal([]byte(tc.in)); got != tc.want {
			t.Errorf("readSignal(%s) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestApplyVerdict(t *testing.T) {
	failed, timedOut, cancelled := accum.Observation{Verdict: accum.VerdictFailed}, accum.Observation{TimedOut: true}, accum.Observation{Cancelled: true}
	for word, want := range map[string]accum.Observation{
		"failed": failed, "Error": failed, "killed": failed,
		"timed_out": timedOut, "timed-out": timedOut, "timeout": timedOut,
		"cancelled": cancelled, "canceled": cancelled, "aborted": cancelled,
		"success": {}, "completed": {}, "": {}, "weird": {},
	} {
		var got accum.Observation
		if known := applyVerdict(&got, word); !reflect.DeepEqual(got, want) || known != !reflect.DeepEqual(want, accum.Observation{}) {
			t.Errorf("applyVerdict(%q) = %+v (%v), want %+v", word, got, known, want)
		}
	}
}

// TestContradictionsFirstWordWins: of several outcome words in one frame
// only the first counts, and none after a signal that cannot be named,
// as before timeouts and cancels became flags rather than verdicts.
func TestContradictionsFirstWordWins(t *testing.T) {
	for _, c := range []struct {
		name, update string
		want         accum.Outcome
		reason       string
	}{
		{"failed, then cancelled in metadata",
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","rawOutput":{"exit_code":0,"outcome":"failed","metadata":{"outcome":"cancelled"}}}`,
			accum.Failed, "the agent's result says the command failed"},
		{"cancelled, then failed in terminal_exit",
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","rawOutput":{"exit_code":0,"outcome":"cancelled"},"_meta":{"terminal_exit":{"terminal_id":"c","exit_code":0,"outcome":"failed"}}}`,
			accum.Cancelled, ""},
		{"an unnamed signal, then cancelled",
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","_meta":{"terminal_exit":{"terminal_id":"c","exit_code":0,"signal":{"n":9},"outcome":"cancelled"}}}`,
			accum.Failed, "the agent's result says the command failed"},
		{"timed_out flag, then cancelled",
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","_meta":{"terminal_exit":{"terminal_id":"c","exit_code":0,"timed_out":true,"outcome":"cancelled"}}}`,
			accum.Cancelled, ""},
	} {
		obs, err := readCase(Generic(), c.update, "")
		if err != nil {
			t.Fatal(err)
		}
		call := accum.NewCall("c", 1024)
		for i := range obs {
			call.Apply(&obs[i])
		}
		call.End(false, "ended")
		r, _ := call.Revision()
		if r.Outcome != c.want || (c.reason != "" && r.OutcomeReason != c.reason) {
			t.Errorf("%s: %v (%s), want %v (%s)", c.name, r.Outcome, r.OutcomeReason, c.want, c.reason)
		}
	}
}

// TestContradictionsEveryDialect: whatever the dialect, a final frame whose
// structured result names a signal or an outcome of failure beside exit 0
// never folds into SUCCEEDED. Each frame failed this on main for some
// dialect (numeric signals and outcome words were read by none).
func TestContradictionsEveryDialect(t *testing.T) {
	frames := []struct {
		name, update string
		want         accum.Outcome
	}{
		{"rawOutput exitCode 0 beside numeric signal 9",
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","rawOutput":{"exitCode":0,"exit_code":0,"stdout":"","stderr":"","signal":9}}`, accum.Failed},
		{"rawOutput exitCode 0 beside signal name",
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","rawOutput":{"exitCode":0,"exit_code":0,"stdout":"","stderr":"","signal":"SIGTERM"}}`, accum.Failed},
		{"rawOutput exitCode 0 beside outcome failed",
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","rawOutput":{"exitCode":0,"exit_code":0,"stdout":"","stderr":"","outcome":"failed"}}`, accum.Failed},
		{"rawOutput exitCode 0 beside outcome timed_out",
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","rawOutput":{"exitCode":0,"exit_code":0,"stdout":"","stderr":"","outcome":"timed_out"}}`, accum.Failed},
		{"rawOutput exitCode 0 beside outcome cancelled",
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","rawOutput":{"exitCode":0,"exit_code":0,"stdout":"","stderr":"","outcome":"cancelled"}}`, accum.Cancelled},
		{"metadata exit 0 beside metadata signal",
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","rawOutput":{"output":"x","metadata":{"exit":0,"signal":"SIGKILL"}}}`, accum.Failed},
		{"an item's exitCode 0 beside its signal (Copilot's shape)",
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","rawOutput":{"contents":[{"type":"shell_exit","exitCode":0,"signal":"SIGKILL"}]}}`, accum.Failed},
		{"an entry's exitCode 0 beside its outcome (an array rawOutput)",
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","rawOutput":[{"query":"make","exitCode":0,"exit_code":0,"outcome":"timed_out"}]}`, accum.Failed},
		{"terminal_exit 0 beside numeric signal",
			`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","_meta":{"terminal_exit":{"terminal_id":"c","exit_code":0,"signal":15}}}`, accum.Failed},
	}
	for _, d := range All() {
		for _, f := range frames {
			obs, err := readCase(d, f.update, "")
			if err != nil {
				t.Fatalf("%s %s: %v", d.Info().Name, f.name, err)
			}
			c := accum.NewCall("c", 1024)
			for i := range obs {
				c.Apply(&obs[i])
			}
			c.End(false, "ended")
			r, _ := c.Revision()
			if r.Outcome == accum.Succeeded {
				t.Errorf("%s, %s: SUCCEEDED (%s)", d.Info().Name, f.name, r.OutcomeReason)
			}
			if f.want == accum.Cancelled && r.Outcome != accum.Cancelled && r.Outcome != accum.Unknown {
				t.Errorf("%s, %s: %v (%s), want CANCELLED", d.Info().Name, f.name, r.Outcome, r.OutcomeReason)
			}
		}
	}
}

// TestContradictionsLeaveSuccessAlone: a signal that is null, "none" or 0
// beside exit 0 is no signal, and a plain success stays a success.
func TestContradictionsLeaveSuccessAlone(t *testing.T) {
	for _, update := range []string{
		`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","rawOutput":{"exit_code":0,"signal":null,"timed_out":false,"outcome":"success"}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","rawOutput":{"exitCode":0,"signal":"none"}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","rawOutput":{"exitCode":0,"signal":0}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","_meta":{"terminal_exit":{"terminal_id":"c","exit_code":0,"signal":null}}}`,
	} {
		obs, err := readCase(Generic(), update, "")
		if err != nil {
			t.Fatal(err)
		}
		c := accum.NewCall("c", 1024)
		for i := range obs {
			c.Apply(&obs[i])
		}
		if r, _ := c.Revision(); r.Outcome != accum.Succeeded {
			t.Errorf("%s: %v (%s), want SUCCEEDED", update, r.Outcome, r.OutcomeReason)
		}
	}
}

// TestNumericSignalsInTerminalExits: `_meta.terminal_exit.signal` and the
// v2 `exitStatus.signal` are read as numbers too (on main a number there
// was dropped, leaving a killed command UNKNOWN).
func TestNumericSignalsInTerminalExits(t *testing.T) {
	runObsCases(t, Generic(), []obsCase{
		{name: "terminal_exit signal 9 with a null exit code",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","_meta":{"terminal_exit":{"terminal_id":"c","exit_code":null,"signal":9}}}`,
			want:   one(accum.Observation{ToolCallID: "c", Shell: accum.ShellYes, Status: accum.StatusCompleted, Signal: "SIGKILL"})},
		{name: "exitStatus signal 15",
			update: `{"sessionUpdate":"terminal_update","terminalId":"t","exitStatus":{"exitCode":null,"signal":15}}`,
			want:   one(accum.Observation{TerminalID: "t", Shell: accum.ShellYes, Signal: "SIGTERM"})},
		{name: "terminal_exit signal that names no signal fails the call",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed","_meta":{"terminal_exit":{"terminal_id":"c","exit_code":null,"signal":{"n":9}}}}`,
			want:   one(accum.Observation{ToolCallID: "c", Shell: accum.ShellYes, Status: accum.StatusCompleted, Verdict: accum.VerdictFailed})},
	})
}

// contradictionsByEachMember is contradictions as it read the frame
// before membersAt: jsonlit.EachMember at each level.
func contradictionsByEachMember(msg []byte, obs []accum.Observation) {
	claim := false
	for i := range obs {
		claim = claim || claimsSuccess(&obs[i])
	}
	if !claim {
		return
	}
	var found accum.Observation
	worded := false
	jsonlit.EachMember(msg, func(key string, val []byte) {
		if key != "PARAMS" {
			return
		}
		jsonlit.EachMember(val, func(key string, val []byte) {
			if key != "UPDATE" {
				return
			}
			jsonlit.EachMember(val, func(key string, val []byte) {
				switch key {
				case "RAWOUTPUT":
					resultWords(&found, &worded, val, 0)
				case "_META":
					jsonlit.EachMember(val, func(key string, val []byte) {
						if key == "TERMINAL_EXIT" {
							resultWords(&found, &worded, val, 1)
						}
					})
				case "EXITSTATUS":
					resultWords(&found, &worded, val, 1)
				}
			})
		})
	})
	for i := range obs {
		if o := &obs[i]; claimsSuccess(o) {
			if found.Signal != "" {
				o.Signal = found.Signal
			}
			o.TimedOut = o.TimedOut || found.TimedOut
			o.Cancelled = o.Cancelled || found.Cancelled
			if o.Verdict == accum.VerdictNone {
				o.Verdict = found.Verdict
			}
		}
	}
}

// contradictions reads, in one pass, what jsonlit.EachMember at each
// level reads: on every recorded frame, and on frames whose params,
// update and members repeat, are spelled in other cases, escaped or
// folded from other letters (ſ for s, K for k), or are not objects.
func TestContradictionsIsEachMember(t *testing.T) {
	frames := recordingFrames(t, 16<<20, true)
	up := func(s string) []byte {
		return []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":` + s + `}}`)
	}
	ro := `{"sessionUpdate":"tool_call_update","rawOutput":{"signal":"SIGTERM"}}`
	for _, m := range []string{
		`{"params":{"update":{"rawOutput":{"outcome":"failed"}}},"params":{"update":{"rawOutput":{"signal":"9","timed_out":true}}}}`,
		`{"PARAMS":{"Update":{"RAWOUTPUT":{"Outcome":"cancelled"}}}}`,
		`{"p\u0061rams":{"upd\u0061te":{"r\u0061wOutput":{"outcome":"timeout"}}}}`,
		`{"paramſ":{"update":{"rawOutput":{"outcome":"failed"}}}}`,
		`{"params":{"update":{"_meta":{"terminal_exit":{"signal":"SIGKILL"}},"exitStatus":{"signal":"SIGINT"}}}}`,
		`{"params":{"update":{"_meta":{"TERMINAL_EXIT":{"signal":"SIGKILL"}}}}}`,
		`{"params":"x","params":[1,{"update":{}}],"params":{"update":"y","update":{"rawOutput":{"metadata":{"outcome":"aborted"}}}}}`,
		`{"params":{"update":{"rawOutput":{"metadata":{"metadata":{"outcome":"failed"}}}}}}`,
		` { "params" : { "update" : { "rawOutput" : { "timedOut" : true } } } } `,
		`[{"params":{"update":{"rawOutput":{"outcome":"failed"}}}}]`,
		`{"id":1,"result":{"params":{"update":{"rawOutput":{"outcome":"failed"}}}}}`,
		`{"a":{"params":{"update":{"rawOutput":{"outcome":"failed"}}}},"params":{"x":1,"update":{"y":[{"rawOutput":{}}],"rawOutput":{"signal":"SIGHUP"}}}}`,
	} {
		frames = append(frames, []byte(m))
	}
	frames = append(frames, up(ro), up(`{"rawOutput":{"outcome":"failed"},"rawoutput":{"signal":"SIGTERM"}}`))
	for _, m := range frames {
		for _, exit := range []*accum.Exit{{Code: 0}, {Code: 0, Placeholder: true}} {
			want := []accum.Observation{{Exit: exit}, {Succeeded: true}}
			got := []accum.Observation{{Exit: exit}, {Succeeded: true}}
			contradictionsByEachMember(m, want)
			contradictions(m, got)
			require.Equal(t, want, got, "%s", m)
		}
	}
}

// FuzzReadShortcuts holds the shortcuts of the reader's own walks to what
// they stand for, on the same bytes: quietKindIn to the search for the
// whole name, lastMarker to LastIndex, contradictions (on valid JSON, as
// readFrame hands it) to the EachMember walk, foldsTo to FoldKey.
//
//	go test ./internal/dialect -run '^$' -fuzz FuzzReadShortcuts -fuzztime 2000x
func FuzzReadShortcuts(f *testing.F) {
	seedFrames(f,
		`{"params":{"update":{"rawOutput":{"outcome":"failed"}}},"params":{"update":{"rawOutput":{"signal":"9"}}}}`,
		`{"p\u0061rams":{"UPDATE":{"rawOutput":{"metadata":{"timed_out":true}}}},"paramſ":{}}`,
		"1\n2\n\n... (output truncated) ...\n\n... (output truncated) ...\n\n3")
	f.Fuzz(func(t *testing.T, msg []byte) {
		if got, want := lookOf(quietKindIn(msg)), lookOf(quietKindInByName(msg)); got != want {
			t.Fatalf("quietKindIn(%q) = %v, the name search %v", msg, got, want)
		}
		if got, want := lastMarker(msg), bytes.LastIndex(msg, []byte(grokTruncMarker)); got != want {
			t.Fatalf("lastMarker(%q) = %d, LastIndex %d", msg, got, want)
		}
		if got, want := lastMarkerString(string(msg)), strings.LastIndex(string(msg), grokTruncMarker); got != want {
			t.Fatalf("lastMarkerString(%q) = %d, LastIndex %d", msg, got, want)
		}
		for _, name := range []string{"PARAMS", "UPDATE", "RAWOUTPUT", "_META"} {
			lit := strconv.Quote(string(msg))
			if len(msg) < 16 && foldsTo([]byte(lit), name) != (jsonlit.FoldKey([]byte(lit)) == name) {
				t.Fatalf("foldsTo(%s, %s)", lit, name)
			}
		}
		if json.Valid(msg) {
			want := []accum.Observation{{Exit: &accum.Exit{}}, {Succeeded: true}}
			got := []accum.Observation{{Exit: &accum.Exit{}}, {Succeeded: true}}
			contradictionsByEachMember(msg, want)
			contradictions(msg, got)
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("contradictions(%s) = %+v, EachMember's %+v", msg, got, want)
			}
		}
	})
}
