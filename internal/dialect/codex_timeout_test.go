package dialect

import (
	"testing"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// codexTimeoutWant is how a call of the codex-timeout scenario must read:
// live (and live, then the replay, which changes nothing) and from the
// session/load replay alone.
type codexTimeoutWant struct {
	exit          *int32
	timedOut      bool
	output        string
	aloneTimedOut bool
	aloneOutput   string
}

// TestCodexTimeoutOrPrintedWords: Codex's own timeout against a command
// that only prints Codex's timeout sentence and exits 124, with the
// frames of test/agents's codex-timeout scenario, recorded on codex-acp
// 0.16.0 (shell_command; its replay is the "Exit code: N\nWall time:
// S seconds\nOutput:" text) and 0.14.0 (the shell tool; its replay is
// Codex's JSON for the model). Live, Codex puts its sentence in
// formatted_output only, before aggregated_output; a command's own
// sentence is in aggregated_output too. Replayed, the sentence states the
// command's run time in milliseconds, as the text's wall time (or the
// JSON's duration_seconds) does in tenths of a second: a sentence that
// names another time than the call's wall time is the command's output.
// A command that prints the sentence after running as long as it says
// (printed_slow) replays the same bytes as a real timeout: read alone,
// its replay is taken for one (an agent limit); live it is read right.
func TestCodexTimeoutOrPrintedWords(t *testing.T) {
	d := codexDialect(t)
	code := func(n int32) *int32 { return &n }
	for _, tc := range []struct {
		name       string
		live, load []string
		want       codexTimeoutWant
	}{
		{name: "0.16.0 text: killed at its 1 s timeout",
			live: []string{
				`{"sessionUpdate":"tool_call","toolCallId":"call_t_codex_real_2","title":"echo start; sleep 5; echo finished-late","kind":"execute","status":"in_progress","content":[{"type":"terminal","terminalId":"call_t_codex_real_2"}],"rawInput":{"call_id":"call_t_codex_real_2","turn_id":"01a2494f-8f62-72d0-82aa-7273f3f9c0f3","started_at_ms":1796526280635,"command":["/bin/bash","-lc","echo start; sleep 5; echo finished-late"],"cwd":"/home/dev/work/proj","parsed_cmd":[{"type":"unknown","cmd":"echo start; sleep 5; echo finished-late"}],"source":"agent"},"_meta":{"terminal_info":{"terminal_id":"call_t_codex_real_2","cwd":"/home/dev/work/proj"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"call_t_codex_real_2","_meta":{"terminal_output":{"terminal_id":"call_t_codex_real_2","data":"start\n"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"call_t_codex_real_2","status":"failed","rawOutput":{"call_id":"call_t_codex_real_2","turn_id":"01a2494f-8f62-72d0-82aa-7273f3f9c0f3","completed_at_ms":1796526281642,"command":["/bin/bash","-lc","echo start; sleep 5; echo finished-late"],"cwd":"/home/dev/work/proj","parsed_cmd":[{"type":"unknown","cmd":"echo start; sleep 5; echo finished-late"}],"source":"agent","stdout":"start\n","stderr":"","aggregated_output":"start\n","exit_code":124,"duration":{"secs":1,"nanos":4861639},"formatted_output":"command timed out after 1004 milliseconds\nstart\n","status":"failed"},"_meta":{"terminal_exit":{"terminal_id":"call_t_codex_real_2","exit_code":124,"signal":null}}}`,
			},
			load: []string{
				`{"sessionUpdate":"tool_call","toolCallId":"call_t_codex_real_2","title":"echo start; sleep 5; echo finished-late","kind":"execute","status":"completed","rawInput":{"command":"echo start; sleep 5; echo finished-late","timeout_ms":1000}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"call_t_codex_real_2","status":"completed","rawOutput":"Exit code: 124\nWall time: 1 seconds\nOutput:\ncommand timed out after 1004 milliseconds\nstart\n"}`,
			},
			want: codexTimeoutWant{exit: code(124), timedOut: true, output: "start\n", aloneTimedOut: true, aloneOutput: "start\n"}},
		{name: "0.16.0 text: killed at its 1 s timeout, no output",
			live: []string{
				`{"sessionUpdate":"tool_call","toolCallId":"call_t_codex_quiet_5","title":"sleep 5","kind":"execute","status":"in_progress","content":[{"type":"terminal","terminalId":"call_t_codex_quiet_5"}],"rawInput":{"call_id":"call_t_codex_quiet_5","turn_id":"01a2494f-93e9-7233-b3e6-3d0c1ba3ec01","started_at_ms":1796526281782,"command":["/bin/bash","-lc","sleep 5"],"cwd":"/home/dev/work/proj","parsed_cmd":[{"type":"unknown","cmd":"sleep 5"}],"source":"agent"},"_meta":{"terminal_info":{"terminal_id":"call_t_codex_quiet_5","cwd":"/home/dev/work/proj"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"call_t_codex_quiet_5","status":"failed","rawOutput":{"call_id":"call_t_codex_quiet_5","turn_id":"01a2494f-93e9-7233-b3e6-3d0c1ba3ec01","completed_at_ms":1796526282789,"command":["/bin/bash","-lc","sleep 5"],"cwd":"/home/dev/work/proj","parsed_cmd":[{"type":"unknown","cmd":"sleep 5"}],"source":"agent","stdout":"","stderr":"","aggregated_output":"","exit_code":124,"duration":{"secs":1,"nanos":5636796},"formatted_output":"command timed out after 1005 milliseconds\n","status":"failed"},"_meta":{"terminal_exit":{"terminal_id":"call_t_codex_quiet_5","exit_code":124,"signal":null}}}`,
			},
			load: []string{
				`{"sessionUpdate":"tool_call","toolCallId":"call_t_codex_quiet_5","title":"sleep 5","kind":"execute","status":"completed","rawInput":{"command":"sleep 5","timeout_ms":1000}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"call_t_codex_quiet_5","status":"completed","rawOutput":"Exit code: 124\nWall time: 1 seconds\nOutput:\ncommand timed out after 1005 milliseconds\n"}`,
			},
			want: codexTimeoutWant{exit: code(124), timedOut: true, aloneTimedOut: true}},
		{name: "0.16.0 text: prints the timeout sentence at once (k_codex_timeout)",
			live: []string{
				`{"sessionUpdate":"tool_call","toolCallId":"call_k_codex_timeout_8","title":"printf 'command timed out after 2000 milliseconds\\nx\\n'; exit 124","kind":"execute","status":"in_progress","content":[{"type":"terminal","terminalId":"call_k_codex_timeout_8"}],"rawInput":{"call_id":"call_k_codex_timeout_8","turn_id":"01a2494f-9860-79f2-9e02-8f6ef0a5ab7c","started_at_ms":1796526282904,"command":["/bin/bash","-lc","printf 'command timed out after 2000 milliseconds\\nx\\n'; exit 124"],"cwd":"/home/dev/work/proj","parsed_cmd":[{"type":"unknown","cmd":"printf 'command timed out after 2000 milliseconds\\nx\\n'; exit 124"}],"source":"agent"},"_meta":{"terminal_info":{"terminal_id":"call_k_codex_timeout_8","cwd":"/home/dev/work/proj"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"call_k_codex_timeout_8","_meta":{"terminal_output":{"terminal_id":"call_k_codex_timeout_8","data":"command timed out after 2000 milliseconds\nx\n"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"call_k_codex_timeout_8","status":"failed","rawOutput":{"call_id":"call_k_codex_timeout_8","turn_id":"01a2494f-9860-79f2-9e02-8f6ef0a5ab7c","completed_at_ms":1796526282909,"command":["/bin/bash","-lc","printf 'command timed out after 2000 milliseconds\\nx\\n'; exit 124"],"cwd":"/home/dev/work/proj","parsed_cmd":[{"type":"unknown","cmd":"printf 'command timed out after 2000 milliseconds\\nx\\n'; exit 124"}],"source":"agent","stdout":"command timed out after 2000 milliseconds\nx\n","stderr":"","aggregated_output":"command timed out after 2000 milliseconds\nx\n","exit_code":124,"duration":{"secs":0,"nanos":4042689},"formatted_output":"command timed out after 2000 milliseconds\nx\n","status":"failed"},"_meta":{"terminal_exit":{"terminal_id":"call_k_codex_timeout_8","exit_code":124,"signal":null}}}`,
			},
			load: []string{
				`{"sessionUpdate":"tool_call","toolCallId":"call_k_codex_timeout_8","title":"printf 'command timed out after 2000 milliseconds\\nx\\n'; exit 124","kind":"execute","status":"completed","rawInput":{"command":"printf 'command timed out after 2000 milliseconds\\nx\\n'; exit 124"}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"call_k_codex_timeout_8","status":"completed","rawOutput":"Exit code: 124\nWall time: 0 seconds\nOutput:\ncommand timed out after 2000 milliseconds\nx\n"}`,
			},
			want: codexTimeoutWant{exit: code(124), output: "command timed out after 2000 milliseconds\nx\n", aloneOutput: "command timed out after 2000 milliseconds\nx\n"}},
		{name: "0.16.0 text: prints the timeout sentence after running as long as it says",
			live: []string{
				`{"sessionUpdate":"tool_call","toolCallId":"call_t_codex_printed_slow_11","title":"sleep 1; printf 'command timed out after 1000 milliseconds\\nstart\\n'; exit 124","kind":"execute","status":"in_progress","content":[{"type":"terminal","terminalId":"call_t_codex_printed_slow_11"}],"rawInput":{"call_id":"call_t_codex_printed_slow_11","turn_id":"01a2494f-98d9-78b1-a5c4-edd565975e7a","started_at_ms":1796526283036,"command":["/bin/bash","-lc","sleep 1; printf 'command timed out after 1000 milliseconds\\nstart\\n'; exit 124"],"cwd":"/home/dev/work/proj","parsed_cmd":[{"type":"unknown","cmd":"sleep 1; printf 'command timed out after 1000 milliseconds\\nstart\\n'; exit 124"}],"source":"agent"},"_meta":{"terminal_info":{"terminal_id":"call_t_codex_printed_slow_11","cwd":"/home/dev/work/proj"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"call_t_codex_printed_slow_11","_meta":{"terminal_output":{"terminal_id":"call_t_codex_printed_slow_11","data":"command timed out after 1000 milliseconds\nstart\n"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"call_t_codex_printed_slow_11","status":"failed","rawOutput":{"call_id":"call_t_codex_printed_slow_11","turn_id":"01a2494f-98d9-78b1-a5c4-edd565975e7a","completed_at_ms":1796526284043,"command":["/bin/bash","-lc","sleep 1; printf 'command timed out after 1000 milliseconds\\nstart\\n'; exit 124"],"cwd":"/home/dev/work/proj","parsed_cmd":[{"type":"unknown","cmd":"sleep 1; printf 'command timed out after 1000 milliseconds\\nstart\\n'; exit 124"}],"source":"agent","stdout":"command timed out after 1000 milliseconds\nstart\n","stderr":"","aggregated_output":"command timed out after 1000 milliseconds\nstart\n","exit_code":124,"duration":{"secs":1,"nanos":6394336},"formatted_output":"command timed out after 1000 milliseconds\nstart\n","status":"failed"},"_meta":{"terminal_exit":{"terminal_id":"call_t_codex_printed_slow_11","exit_code":124,"signal":null}}}`,
			},
			load: []string{
				`{"sessionUpdate":"tool_call","toolCallId":"call_t_codex_printed_slow_11","title":"sleep 1; printf 'command timed out after 1000 milliseconds\\nstart\\n'; exit 124","kind":"execute","status":"completed","rawInput":{"command":"sleep 1; printf 'command timed out after 1000 milliseconds\\nstart\\n'; exit 124"}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"call_t_codex_printed_slow_11","status":"completed","rawOutput":"Exit code: 124\nWall time: 1 seconds\nOutput:\ncommand timed out after 1000 milliseconds\nstart\n"}`,
			},
			want: codexTimeoutWant{exit: code(124), output: "command timed out after 1000 milliseconds\nstart\n", aloneTimedOut: true, aloneOutput: "start\n"}},
		{name: "0.14.0 JSON: killed at its 1 s timeout",
			live: []string{
				`{"sessionUpdate":"tool_call","toolCallId":"call_t_codex_real_2","title":"echo start; sleep 5; echo finished-late","kind":"execute","status":"in_progress","content":[{"type":"terminal","terminalId":"call_t_codex_real_2"}],"rawInput":{"call_id":"call_t_codex_real_2","turn_id":"01a24950-4d88-7a33-ac44-e2adf0aed912","started_at_ms":1796526329293,"command":["bash","-lc","echo start; sleep 5; echo finished-late"],"cwd":"/home/dev/work/proj","parsed_cmd":[{"type":"unknown","cmd":"echo start; sleep 5; echo finished-late"}],"source":"agent"},"_meta":{"terminal_info":{"terminal_id":"call_t_codex_real_2","cwd":"/home/dev/work/proj"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"call_t_codex_real_2","_meta":{"terminal_output":{"terminal_id":"call_t_codex_real_2","data":"start\n"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"call_t_codex_real_2","status":"failed","rawOutput":{"call_id":"call_t_codex_real_2","turn_id":"01a24950-4d88-7a33-ac44-e2adf0aed912","completed_at_ms":1796526330297,"command":["bash","-lc","echo start; sleep 5; echo finished-late"],"cwd":"/home/dev/work/proj","parsed_cmd":[{"type":"unknown","cmd":"echo start; sleep 5; echo finished-late"}],"source":"agent","stdout":"start\n","stderr":"","aggregated_output":"start\n","exit_code":124,"duration":{"secs":1,"nanos":2829258},"formatted_output":"command timed out after 1002 milliseconds\nstart\n","status":"failed"},"_meta":{"terminal_exit":{"terminal_id":"call_t_codex_real_2","exit_code":124,"signal":null}}}`,
			},
			load: []string{
				`{"sessionUpdate":"tool_call","toolCallId":"call_t_codex_real_2","title":"echo start; sleep 5; echo finished-late","kind":"execute","status":"completed","rawInput":{"command":["bash","-lc","echo start; sleep 5; echo finished-late"],"timeout_ms":1000}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"call_t_codex_real_2","status":"completed","rawOutput":"{\"output\":\"command timed out after 1002 milliseconds\\nstart\\n\",\"metadata\":{\"exit_code\":124,\"duration_seconds\":1.0}}"}`,
			},
			want: codexTimeoutWant{exit: code(124), timedOut: true, output: "start\n", aloneTimedOut: true, aloneOutput: "start\n"}},
		{name: "0.14.0 JSON: killed at its 1 s timeout, no output",
			live: []string{
				`{"sessionUpdate":"tool_call","toolCallId":"call_t_codex_quiet_5","title":"sleep 5","kind":"execute","status":"in_progress","content":[{"type":"terminal","terminalId":"call_t_codex_quiet_5"}],"rawInput":{"call_id":"call_t_codex_quiet_5","turn_id":"01a24950-51e7-7f21-88f4-18f6375ef236","started_at_ms":1796526330389,"command":["bash","-lc","sleep 5"],"cwd":"/home/dev/work/proj","parsed_cmd":[{"type":"unknown","cmd":"sleep 5"}],"source":"agent"},"_meta":{"terminal_info":{"terminal_id":"call_t_codex_quiet_5","cwd":"/home/dev/work/proj"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"call_t_codex_quiet_5","status":"failed","rawOutput":{"call_id":"call_t_codex_quiet_5","turn_id":"01a24950-51e7-7f21-88f4-18f6375ef236","completed_at_ms":1796526331392,"command":["bash","-lc","sleep 5"],"cwd":"/home/dev/work/proj","parsed_cmd":[{"type":"unknown","cmd":"sleep 5"}],"source":"agent","stdout":"","stderr":"","aggregated_output":"","exit_code":124,"duration":{"secs":1,"nanos":3097779},"formatted_output":"command timed out after 1003 milliseconds\n","status":"failed"},"_meta":{"terminal_exit":{"terminal_id":"call_t_codex_quiet_5","exit_code":124,"signal":null}}}`,
			},
			load: []string{
				`{"sessionUpdate":"tool_call","toolCallId":"call_t_codex_quiet_5","title":"sleep 5","kind":"execute","status":"completed","rawInput":{"command":["bash","-lc","sleep 5"],"timeout_ms":1000}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"call_t_codex_quiet_5","status":"completed","rawOutput":"{\"output\":\"command timed out after 1003 milliseconds\\n\",\"metadata\":{\"exit_code\":124,\"duration_seconds\":1.0}}"}`,
			},
			want: codexTimeoutWant{exit: code(124), timedOut: true, aloneTimedOut: true}},
		{name: "0.14.0 JSON: prints the timeout sentence at once (k_codex_timeout)",
			live: []string{
				`{"sessionUpdate":"tool_call","toolCallId":"call_k_codex_timeout_8","title":"printf 'command timed out after 2000 milliseconds\\nx\\n'; exit 124","kind":"execute","status":"in_progress","content":[{"type":"terminal","terminalId":"call_k_codex_timeout_8"}],"rawInput":{"call_id":"call_k_codex_timeout_8","turn_id":"01a24950-562f-7e01-bd3b-831a0dea4aa9","started_at_ms":1796526331485,"command":["bash","-lc","printf 'command timed out after 2000 milliseconds\\nx\\n'; exit 124"],"cwd":"/home/dev/work/proj","parsed_cmd":[{"type":"unknown","cmd":"printf 'command timed out after 2000 milliseconds\\nx\\n'; exit 124"}],"source":"agent"},"_meta":{"terminal_info":{"terminal_id":"call_k_codex_timeout_8","cwd":"/home/dev/work/proj"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"call_k_codex_timeout_8","_meta":{"terminal_output":{"terminal_id":"call_k_codex_timeout_8","data":"command timed out after 2000 milliseconds\nx\n"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"call_k_codex_timeout_8","status":"failed","rawOutput":{"call_id":"call_k_codex_timeout_8","turn_id":"01a24950-562f-7e01-bd3b-831a0dea4aa9","completed_at_ms":1796526331490,"command":["bash","-lc","printf 'command timed out after 2000 milliseconds\\nx\\n'; exit 124"],"cwd":"/home/dev/work/proj","parsed_cmd":[{"type":"unknown","cmd":"printf 'command timed out after 2000 milliseconds\\nx\\n'; exit 124"}],"source":"agent","stdout":"command timed out after 2000 milliseconds\nx\n","stderr":"","aggregated_output":"command timed out after 2000 milliseconds\nx\n","exit_code":124,"duration":{"secs":0,"nanos":4732789},"formatted_output":"command timed out after 2000 milliseconds\nx\n","status":"failed"},"_meta":{"terminal_exit":{"terminal_id":"call_k_codex_timeout_8","exit_code":124,"signal":null}}}`,
			},
			load: []string{
				`{"sessionUpdate":"tool_call","toolCallId":"call_k_codex_timeout_8","title":"printf 'command timed out after 2000 milliseconds\\nx\\n'; exit 124","kind":"execute","status":"completed","rawInput":{"command":["bash","-lc","printf 'command timed out after 2000 milliseconds\\nx\\n'; exit 124"]}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"call_k_codex_timeout_8","status":"completed","rawOutput":"{\"output\":\"command timed out after 2000 milliseconds\\nx\\n\",\"metadata\":{\"exit_code\":124,\"duration_seconds\":0.0}}"}`,
			},
			want: codexTimeoutWant{exit: code(124), output: "command timed out after 2000 milliseconds\nx\n", aloneOutput: "command timed out after 2000 milliseconds\nx\n"}},
		{name: "0.14.0 JSON: prints the timeout sentence after running as long as it says",
			live: []string{
				`{"sessionUpdate":"tool_call","toolCallId":"call_t_codex_printed_slow_11","title":"sleep 1; printf 'command timed out after 1000 milliseconds\\nstart\\n'; exit 124","kind":"execute","status":"in_progress","content":[{"type":"terminal","terminalId":"call_t_codex_printed_slow_11"}],"rawInput":{"call_id":"call_t_codex_printed_slow_11","turn_id":"01a24950-568e-7872-b4b2-c032a36e00a4","started_at_ms":1796526331583,"command":["bash","-lc","sleep 1; printf 'command timed out after 1000 milliseconds\\nstart\\n'; exit 124"],"cwd":"/home/dev/work/proj","parsed_cmd":[{"type":"unknown","cmd":"sleep 1; printf 'command timed out after 1000 milliseconds\\nstart\\n'; exit 124"}],"source":"agent"},"_meta":{"terminal_info":{"terminal_id":"call_t_codex_printed_slow_11","cwd":"/home/dev/work/proj"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"call_t_codex_printed_slow_11","_meta":{"terminal_output":{"terminal_id":"call_t_codex_printed_slow_11","data":"command timed out after 1000 milliseconds\nstart\n"}}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"call_t_codex_printed_slow_11","status":"failed","rawOutput":{"call_id":"call_t_codex_printed_slow_11","turn_id":"01a24950-568e-7872-b4b2-c032a36e00a4","completed_at_ms":1796526332589,"command":["bash","-lc","sleep 1; printf 'command timed out after 1000 milliseconds\\nstart\\n'; exit 124"],"cwd":"/home/dev/work/proj","parsed_cmd":[{"type":"unknown","cmd":"sleep 1; printf 'command timed out after 1000 milliseconds\\nstart\\n'; exit 124"}],"source":"agent","stdout":"command timed out after 1000 milliseconds\nstart\n","stderr":"","aggregated_output":"command timed out after 1000 milliseconds\nstart\n","exit_code":124,"duration":{"secs":1,"nanos":5044115},"formatted_output":"command timed out after 1000 milliseconds\nstart\n","status":"failed"},"_meta":{"terminal_exit":{"terminal_id":"call_t_codex_printed_slow_11","exit_code":124,"signal":null}}}`,
			},
			load: []string{
				`{"sessionUpdate":"tool_call","toolCallId":"call_t_codex_printed_slow_11","title":"sleep 1; printf 'command timed out after 1000 milliseconds\\nstart\\n'; exit 124","kind":"execute","status":"completed","rawInput":{"command":["bash","-lc","sleep 1; printf 'command timed out after 1000 milliseconds\\nstart\\n'; exit 124"]}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"call_t_codex_printed_slow_11","status":"completed","rawOutput":"{\"output\":\"command timed out after 1000 milliseconds\\nstart\\n\",\"metadata\":{\"exit_code\":124,\"duration_seconds\":1.0}}"}`,
			},
			want: codexTimeoutWant{exit: code(124), output: "command timed out after 1000 milliseconds\nstart\n", aloneTimedOut: true, aloneOutput: "start\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fold := func(c *accum.Call, frames []string, replayed bool, last *accum.Revision, out *string) {
				for _, f := range frames {
					obs, err := readCase(d, f, "")
					require.NoError(t, err)
					for i := range obs {
						obs[i].Replayed = replayed
						c.Apply(&obs[i])
						if r, ok := c.Revision(); ok {
							*last = r
							if t := r.Texts[accum.Combined]; t != nil {
								*out = t.Text
							}
						}
					}
				}
			}
			check := func(what string, r accum.Revision, out string, timedOut bool, output string) {
				t.Helper()
				assert.Equal(t, accum.Ended, r.State, what)
				assert.Equal(t, accum.Failed, r.Outcome, "%s: %s", what, r.OutcomeReason)
				assert.Equal(t, tc.want.exit, r.ExitCode, what)
				assert.Equal(t, timedOut, r.TimedOut, what)
				assert.Equal(t, output, out, what)
			}
			live := accum.NewCall("c", 1<<20)
			var r accum.Revision
			out := ""
			fold(live, tc.live, false, &r, &out)
			check("live", r, out, tc.want.timedOut, tc.want.output)
			fold(live, tc.load, true, &r, &out)
			check("live, then the replay", r, out, tc.want.timedOut, tc.want.output)

			alone := accum.NewCall("c", 1<<20)
			r, out = accum.Revision{}, ""
			fold(alone, tc.load, true, &r, &out)
			check("the replay alone", r, out, tc.want.aloneTimedOut, tc.want.aloneOutput)
		})
	}
}
