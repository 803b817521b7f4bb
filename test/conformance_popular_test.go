package test

import (
	"fmt"
	"strings"
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
)

// Conformance traces for GitHub Copilot CLI, Cline and pi (through
// pi-acp), written from what the field guide (docs/agents.md) says each
// sends for the nine commands of the recorded scenario (ls, exit 3,
// stderr, a missing directory, slow output, 229 KB, bad UTF-8, a timeout,
// kill -9) and for cancels and rejections. The repository's recordings of
// these agents hold only the cancel/reject scenario.

// ---------------------------------------------------------------- Copilot

const copilotAgent = "Copilot"

// cpOpen is Copilot's tool_call: the title is the model's description.
func cpOpen(id, cmd, desc string) string {
	return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call","toolCallId":%q,"title":%s,"kind":"execute","status":"pending","rawInput":{"command":%s,"description":%s}}`, id, js(desc), js(cmd), js(desc)))
}

// cpAsk is Copilot's permission ask, rawInput {command, commands}.
func cpAsk(n int, id, cmd, desc string) string {
	return ask(n, fmt.Sprintf(`{"toolCallId":%q,"title":%s,"kind":"execute","status":"pending","rawInput":{"command":%s,"commands":[%s]}}`, id, js(desc), js(cmd), js(cmd)))
}

// cpLive is a status-less update whose content is the output so far (or
// its last 10,240 characters).
func cpLive(id, text string) string {
	return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"content":[{"type":"content","content":{"type":"text","text":%s}}]}`, id, js(text)))
}

// cpFinal is the completed final: content with the shellId trailer, and
// the exit code in rawOutput.contents[] (left out when exit is "").
func cpFinal(id, text, exit string) string {
	body := text + "\n<shellId: 7 completed with exit code " + exit + ">"
	contents := ""
	if exit != "" {
		contents = fmt.Sprintf(`,"contents":[{"type":"shell_exit","shellId":"7","exitCode":%s,"cwd":"/w","outputPreview":%s}]`, exit, js(text[:min(len(text), 200)]))
	}
	return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"status":"completed","content":[{"type":"content","content":{"type":"text","text":%s}}],"rawOutput":{"content":%s,"detailedContent":%s%s}}`, id, js(body), js(body), js(body), contents))
}

// cpStep is one command as Copilot runs it with the client allowing it:
// the tool_call, the ask and its answer, live snapshots, the final.
func cpStep(n int, id, cmd, desc string, live []string, final string) []string {
	f := []string{cpOpen(id, cmd, desc), cpAsk(n, id, cmd, desc), answer(n, "allow")}
	for _, l := range live {
		f = append(f, cpLive(id, l))
	}
	return append(f, final)
}

func TestConformanceCopilot(t *testing.T) {
	const ls = "alpha.txt\nbeta.md\ngamma.go\nnotes.txt\n"
	whole := seq(1, 40000) // 228,894 bytes
	// Live: the whole output so far, then its last 10,240 characters,
	// each overlapping the one before.
	var bigLive []string
	for _, end := range []int{4000, 9000} {
		bigLive = append(bigLive, whole[:end])
	}
	for end := 15000; end < len(whole); end += 8000 {
		bigLive = append(bigLive, whole[end-10240:end])
	}
	bigLive = append(bigLive, whole[len(whole)-10240:])
	tooLarge := "Output too large to read at once (223.5 KB). Saved to: /tmp/copilot-tool-output-1a2b.txt\nConsider using tools like grep (for searching), head/tail (for viewing start/end), view with view_range (for specific sections), or jq (for JSON) to examine portions of the output.\n\nPreview (first 500 chars):\n" + whole[:500]
	// A big output whose windows do not meet: only the last is known.
	gapped := []string{whole[:9000], whole[100000:110240], whole[len(whole)-10240:]}
	const killMsg = "Command not executed. The command would terminate the shell session, which is not allowed. Try running the command without killing the shell."
	runConformance(t, []cs{{
		name: "ls_exit_0_from_contents_trailer_not_output", agent: copilotAgent, dialect: "copilot",
		frames: cpStep(10, "call_ls_1", "ls", "List files", []string{ls}, cpFinal("call_ls_1", ls, "0")),
		want:   []wantExec{{id: "call_ls_1", command: "ls", cwd: "/w", desc: "List files", outcome: succeeded, exit: code(0), output: ls}},
	}, {
		name: "exit_3_under_completed_is_failed_3", agent: copilotAgent, dialect: "copilot",
		frames: cpStep(11, "call_exit3_2", "printf 'a\\nb\\n'; exit 3", "Exit 3", []string{"a\nb\n"}, cpFinal("call_exit3_2", "a\nb\n", "3")),
		want:   []wantExec{{id: "call_exit3_2", command: "printf 'a\\nb\\n'; exit 3", cwd: "/w", desc: "Exit 3", outcome: failed, exit: code(3), output: "a\nb\n"}},
	}, {
		name: "stderr_merged_into_the_output", agent: copilotAgent, dialect: "copilot",
		frames: cpStep(12, "call_stderr_3", "echo to-stdout; echo to-stderr >&2; echo more-stdout", "Streams",
			[]string{"to-stdout\n", "to-stdout\nto-stderr\nmore-stdout\n"}, cpFinal("call_stderr_3", "to-stdout\nto-stderr\nmore-stdout", "0")),
		want: []wantExec{{id: "call_stderr_3", command: "echo to-stdout; echo to-stderr >&2; echo more-stdout", cwd: "/w", desc: "Streams", outcome: succeeded, exit: code(0), output: "to-stdout\nto-stderr\nmore-stdout\n"}},
	}, {
		name: "missing_directory_exit_2", agent: copilotAgent, dialect: "copilot",
		frames: cpStep(13, "call_missing_4", "ls /nonexistent-dir-xyz", "Missing dir",
			[]string{"ls: cannot access '/nonexistent-dir-xyz': No such file or directory\n"}, cpFinal("call_missing_4", "ls: cannot access '/nonexistent-dir-xyz': No such file or directory\n", "2")),
		want: []wantExec{{id: "call_missing_4", command: "ls /nonexistent-dir-xyz", cwd: "/w", desc: "Missing dir", outcome: failed, exit: code(2), output: "ls: cannot access '/nonexistent-dir-xyz': No such file or directory\n"}},
	}, {
		name: "slow_output_cumulative_snapshots", agent: copilotAgent, dialect: "copilot",
		frames: cpStep(14, "call_slow_5", "for i in 1 2 3 4 5; do echo line$i; sleep 0.3; done", "Slow",
			[]string{"line1\n", "line1\nline2\n", "line1\nline2\nline3\n", "line1\nline2\nline3\nline4\n", "line1\nline2\nline3\nline4\nline5\n"},
			cpFinal("call_slow_5", "line1\nline2\nline3\nline4\nline5\n", "0")),
		want: []wantExec{{id: "call_slow_5", command: "for i in 1 2 3 4 5; do echo line$i; sleep 0.3; done", cwd: "/w", desc: "Slow", outcome: succeeded, exit: code(0), output: "line1\nline2\nline3\nline4\nline5\n"}},
	}, {
		name: "big_output_tail_windows_folded_whole_too_large_notice_not_output", agent: copilotAgent, dialect: "copilot",
		frames: cpStep(15, "call_big_6", "seq 1 40000", "Count", bigLive, cpFinal("call_big_6", tooLarge, "0")),
		want:   []wantExec{{id: "call_big_6", command: "seq 1 40000", cwd: "/w", desc: "Count", outcome: succeeded, exit: code(0), output: whole}},
	}, {
		name: "big_output_windows_that_do_not_meet_keep_the_last_truncated", agent: copilotAgent, dialect: "copilot",
		frames: cpStep(16, "call_big_7", "seq 1 40000", "Count", gapped, cpFinal("call_big_7", tooLarge, "0")),
		want: []wantExec{{id: "call_big_7", command: "seq 1 40000", cwd: "/w", desc: "Count", outcome: succeeded, exit: code(0), output: whole[len(whole)-10240:], trunc: true,
			extra: func(t *testing.T, x *pb.ShellExec) {
				if got := x.GetOutput().GetTotalBytes(); got < 228812 {
					t.Errorf("total_bytes %d, want at least the stated 223.5 KB", got)
				}
			}}},
	}, {
		name: "bad_utf8_as_copilot_decoded_it", agent: copilotAgent, dialect: "copilot",
		frames: cpStep(17, "call_badutf8_8", `printf '\xff\xfe ok\n'`, "Bytes", []string{"\ufffd\ufffd ok\n"}, cpFinal("call_badutf8_8", "\ufffd\ufffd ok", "0")),
		want:   []wantExec{{id: "call_badutf8_8", command: `printf '\xff\xfe ok\n'`, cwd: "/w", desc: "Bytes", outcome: succeeded, exit: code(0), output: "\ufffd\ufffd ok\n"}},
	}, {
		name: "timeout_parameter_does_not_stop_the_command", agent: copilotAgent, dialect: "copilot",
		frames: cpStep(18, "call_timeout_9", "echo start; sleep 6; echo finished-late", "Sleep", []string{"start\n", "start\nfinished-late\n"}, cpFinal("call_timeout_9", "start\nfinished-late", "0")),
		want:   []wantExec{{id: "call_timeout_9", command: "echo start; sleep 6; echo finished-late", cwd: "/w", desc: "Sleep", outcome: succeeded, exit: code(0), output: "start\nfinished-late\n"}},
	}, {
		name: "kill_shell_refused_by_policy_is_failed_unknown_exit", agent: copilotAgent, dialect: "copilot",
		frames: []string{
			cpOpen("call_signal_10", "echo before-kill; kill -9 $$", "Kill"),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_signal_10","status":"failed","rawOutput":{"message":` + js(killMsg) + `,"code":"failure"}}`),
		},
		want: []wantExec{{id: "call_signal_10", command: "echo before-kill; kill -9 $$", cwd: "/w", desc: "Kill", outcome: failed,
			extra: func(t *testing.T, x *pb.ShellExec) {
				if !strings.Contains(x.GetOutcomeReason(), "Command not executed.") {
					t.Errorf("outcome reason %q does not quote the refusal", x.GetOutcomeReason())
				}
			}}},
	}, {
		name: "rejected_ask_is_cancelled_without_output", agent: copilotAgent, dialect: "copilot",
		frames: []string{
			cpOpen("call_reject_11", "rm -f notes.txt && echo removed", "Remove"),
			cpAsk(19, "call_reject_11", "rm -f notes.txt && echo removed", "Remove"),
			answer(19, "reject"),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_reject_11","status":"failed","rawOutput":{"message":"The user rejected this tool call.","code":"rejected"}}`),
		},
		want: []wantExec{{id: "call_reject_11", command: "rm -f notes.txt && echo removed", cwd: "/w", desc: "Remove", outcome: cancelled}},
	}, {
		name: "cancelled_call_without_a_final_ends_with_the_turn", agent: copilotAgent, dialect: "copilot",
		frames: append(cpStep(20, "call_ticks_12", "for i in $(seq 20); do echo tick$i; sleep 0.25; done", "Ticks", []string{"tick1\n", "tick1\ntick2\n"}, clientCancel),
			turnResult(2, "cancelled")),
		want: []wantExec{{id: "call_ticks_12", command: "for i in $(seq 20); do echo tick$i; sleep 0.25; done", cwd: "/w", desc: "Ticks", outcome: cancelled, output: "tick1\ntick2\n"}},
	}, {
		name: "replay_without_contents_reads_the_trailer", agent: copilotAgent, dialect: "copilot",
		frames: []string{
			cpOpen("call_exit3_2", "printf 'a\\nb\\n'; exit 3", "Exit 3"),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_exit3_2","status":"completed","content":[{"type":"content","content":{"type":"text","text":"a\nb\n<shellId: 1 completed with exit code 3>"}}]}`),
		},
		want: []wantExec{{id: "call_exit3_2", command: "printf 'a\\nb\\n'; exit 3", cwd: "/w", desc: "Exit 3", outcome: failed, exit: code(3), output: "a\nb"}},
	}})
}

// seq is the output of `seq from to`.
func seq(from, to int) string {
	var sb strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&sb, "%d\n", i)
	}
	return sb.String()
}

// ---------------------------------------------------------------- pi

const piAgent = "pi-acp"

// piOpen is pi-acp's tool_call (titled "bash" while the model writes the
// command), the update that names it and the status-only update.
func piOpen(id, cmd string) []string {
	return []string{
		upd(fmt.Sprintf(`{"sessionUpdate":"tool_call","toolCallId":%q,"title":"bash","kind":"execute","status":"pending","content":[{"type":"terminal","terminalId":%q}],"_meta":{"terminal_info":{"terminal_id":%q,"cwd":"/w"}}}`, id, id, id)),
		upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"title":%s,"kind":"execute","status":"in_progress"}`, id, js(cmd))),
		upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"status":"in_progress","_meta":{}}`, id)),
	}
}

// piDelta is one _meta.terminal_output "delta".
func piDelta(id, data string) string {
	return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"status":"in_progress","_meta":{"terminal_output":{"terminal_id":%q,"data":%s}}}`, id, id, js(data)))
}

// piEnd is the final: pi's last delta (none when data is "") and
// pi-acp's 0/1 terminal_exit.
func piEnd(id, status, data string) string {
	exit := 0
	if status == "failed" {
		exit = 1
	}
	out := ""
	if data != "" {
		out = fmt.Sprintf(`"terminal_output":{"terminal_id":%q,"data":%s},`, id, js(data))
	}
	return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"status":%q,"_meta":{%s"terminal_exit":{"terminal_id":%q,"exit_code":%d,"signal":null}}}`, id, status, out, id, exit))
}

// piRun is one whole command: open, deltas, final.
func piRun(id, cmd string, deltas []string, status, last string) []string {
	f := piOpen(id, cmd)
	for _, d := range deltas {
		f = append(f, piDelta(id, d))
	}
	return append(f, piEnd(id, status, last))
}

func TestConformancePi(t *testing.T) {
	const ls = "alpha.txt\nbeta.md\ngamma.go\nnotes.txt\n"
	lines := func(from, to int) string { return seq(from, to) }
	note := "\n\n[Showing lines 38001-40000 of 40000. Full output: /tmp/pi-bash-4f2a91.log]"
	w := func(id, cmd, out string, o pb.ShellOutcome, exit *int32) wantExec {
		return wantExec{id: id, command: cmd, cwd: "/w", outcome: o, exit: exit, output: out}
	}
	runConformance(t, []cs{{
		name: "ls_exit_0_from_terminal_exit", agent: piAgent, dialect: "pi",
		frames: piRun("call_ls_1", "ls", []string{ls}, "completed", ""),
		want:   []wantExec{w("call_ls_1", "ls", ls, succeeded, code(0))},
	}, {
		name: "exit_3_from_the_last_line_not_terminal_exit_1", agent: piAgent, dialect: "pi",
		frames: piRun("call_exit3_2", "printf 'a\\nb\\n'; exit 3", []string{"a\nb\n"}, "failed", "\n\nCommand exited with code 3"),
		want:   []wantExec{w("call_exit3_2", "printf 'a\\nb\\n'; exit 3", "a\nb\n", failed, code(3))},
	}, {
		name: "stderr_merged", agent: piAgent, dialect: "pi",
		frames: piRun("call_stderr_3", "echo to-stdout; echo to-stderr >&2; echo more-stdout", []string{"to-stdout\nto-stderr\n", "more-stdout\n"}, "completed", ""),
		want:   []wantExec{w("call_stderr_3", "echo to-stdout; echo to-stderr >&2; echo more-stdout", "to-stdout\nto-stderr\nmore-stdout\n", succeeded, code(0))},
	}, {
		name: "missing_directory_exit_2", agent: piAgent, dialect: "pi",
		frames: piRun("call_missing_4", "ls /nonexistent-dir-xyz", []string{"ls: cannot access '/nonexistent-dir-xyz': No such file or directory\n"}, "failed", "\n\nCommand exited with code 2"),
		want:   []wantExec{w("call_missing_4", "ls /nonexistent-dir-xyz", "ls: cannot access '/nonexistent-dir-xyz': No such file or directory\n", failed, code(2))},
	}, {
		name: "slow_output_deltas", agent: piAgent, dialect: "pi",
		frames: piRun("call_slow_5", "for i in 1 2 3 4 5; do echo line$i; sleep 0.3; done", []string{"line1\n", "line2\n", "line3\n", "line4\n", "line5\n"}, "completed", ""),
		want:   []wantExec{w("call_slow_5", "for i in 1 2 3 4 5; do echo line$i; sleep 0.3; done", "line1\nline2\nline3\nline4\nline5\n", succeeded, code(0))},
	}, {
		name: "big_output_windows_that_restart_are_not_appended", agent: piAgent, dialect: "pi",
		frames: piRun("call_big_6", "seq 1 40000", []string{lines(10775, 12774), lines(38001, 40000)}, "completed", note),
		want:   []wantExec{{id: "call_big_6", command: "seq 1 40000", cwd: "/w", outcome: succeeded, exit: code(0), output: lines(38001, 40000), trunc: true}},
	}, {
		name: "big_output_windows_that_overlap_fold_without_duplication", agent: piAgent, dialect: "pi",
		frames: piRun("call_big_7", "seq 1 3000", []string{lines(1, 1500), lines(1501, 1800), lines(201, 2200), lines(1001, 3000)}, "completed",
			"\n\n[Showing lines 1001-3000 of 3000. Full output: /tmp/pi-bash-77.log]"),
		want: []wantExec{{id: "call_big_7", command: "seq 1 3000", cwd: "/w", outcome: succeeded, exit: code(0), output: lines(1, 3000), trunc: true}},
	}, {
		name: "bad_utf8_as_pi_decoded_it", agent: piAgent, dialect: "pi",
		frames: piRun("call_badutf8_8", `printf '\xff\xfe ok\n'`, []string{"\ufffd\ufffd ok\n"}, "completed", ""),
		want:   []wantExec{w("call_badutf8_8", `printf '\xff\xfe ok\n'`, "\ufffd\ufffd ok\n", succeeded, code(0))},
	}, {
		name: "timeout_is_timed_out_notice_not_output", agent: piAgent, dialect: "pi",
		frames: piRun("call_timeout_9", "echo start; sleep 6; echo finished-late", []string{"start\n"}, "failed", "\n\nCommand timed out after 2 seconds"),
		want:   []wantExec{{id: "call_timeout_9", command: "echo start; sleep 6; echo finished-late", cwd: "/w", outcome: failed, timedOut: true, output: "start\n"}},
	}, {
		name: "kill_9_is_exit_137_sigkill", agent: piAgent, dialect: "pi",
		frames: piRun("call_signal_10", "echo before-kill; kill -9 $$", []string{"before-kill\n"}, "failed", "\n\nCommand exited with code 137"),
		want:   []wantExec{{id: "call_signal_10", command: "echo before-kill; kill -9 $$", cwd: "/w", outcome: failed, exit: code(137), signal: "SIGKILL", output: "before-kill\n"}},
	}, {
		name: "no_output_success_placeholder_is_not_output", agent: piAgent, dialect: "pi",
		frames: piRun("call_true_11", "true", nil, "completed", "(no output)"),
		want:   []wantExec{w("call_true_11", "true", "", succeeded, code(0))},
	}, {
		name: "client_cancel_command_aborted_is_cancelled", agent: piAgent, dialect: "pi",
		frames: append(append(piOpen("call_ticks_12", "for i in $(seq 20); do echo tick$i; sleep 0.25; done"),
			piDelta("call_ticks_12", "tick1\n"), piDelta("call_ticks_12", "tick2\n"), clientCancel,
			piEnd("call_ticks_12", "failed", "\n\nCommand aborted")), turnResult(2, "cancelled")),
		want: []wantExec{w("call_ticks_12", "for i in $(seq 20); do echo tick$i; sleep 0.25; done", "tick1\ntick2\n", cancelled, nil)},
	}, {
		name: "replayed_failed_call_says_completed_then_failed", agent: piAgent, dialect: "pi",
		frames: []string{
			upd(`{"sessionUpdate":"tool_call","toolCallId":"call_exit3_2","title":"bash","kind":"execute","status":"completed","content":[{"type":"terminal","terminalId":"call_exit3_2"}],"_meta":{"terminal_info":{"terminal_id":"call_exit3_2","cwd":"/w"}}}`),
			piEnd("call_exit3_2", "failed", "a\nb\n\n\nCommand exited with code 3"),
		},
		want: []wantExec{w("call_exit3_2", "", "a\nb\n", failed, code(3))},
	}})
}

// ---------------------------------------------------------------- Cline

const clineAgent = "cline"

// clPending is the update Cline sends before any tool_call.
func clPending(id string, cmds ...string) string {
	return upd(fmt.Sprintf(`{"toolCallId":%q,"title":%s,"kind":"execute","status":"pending","rawInput":{"commands":%s},"sessionUpdate":"tool_call_update"}`, id, js("run_commands: "+cmds[0]), jsList(cmds)))
}

// clAsk is Cline's permission ask.
func clAsk(n int, id string, cmds ...string) string {
	return ask(n, fmt.Sprintf(`{"toolCallId":%q,"title":%s,"kind":"execute","status":"pending","rawInput":{"commands":%s}}`, id, js("run_commands: "+cmds[0]), jsList(cmds)))
}

// clOpen is the late tool_call, status pending again.
func clOpen(id string, cmds ...string) string {
	return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call","toolCallId":%q,"title":%s,"kind":"execute","status":"pending","rawInput":{"commands":%s}}`, id, js("run_commands: "+cmds[0]), jsList(cmds)))
}

// clDone is the final, rawOutput the array of results.
func clDone(id, status, rawOutput string) string {
	return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"status":%q,"rawOutput":%s}`, id, status, rawOutput))
}

// clEntry is one command's result.
func clEntry(query, result string, code int) string {
	if code == 0 {
		return fmt.Sprintf(`{"query":%s,"result":%s,"success":true}`, js(query), js(result))
	}
	return fmt.Sprintf(`{"query":%s,"result":%s,"error":%s,"success":false}`, js(query), js(fmt.Sprintf("[Command exited with code %d]\n%s", code, result)), js(fmt.Sprintf("Command exited with code %d", code)))
}

// clRun is one allowed call in Cline's frame order.
func clRun(n int, id string, cmds []string, status, rawOutput string) []string {
	return []string{
		clPending(id, cmds...), clAsk(n, id, cmds...), answer(n, "allow"),
		upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"status":"in_progress"}`, id)),
		clOpen(id, cmds...),
		clDone(id, status, rawOutput),
	}
}

func jsList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = js(s)
	}
	return "[" + strings.Join(q, ",") + "]"
}

func TestConformanceCline(t *testing.T) {
	const ls = "alpha.txt\nbeta.md\ngamma.go\nnotes.txt\n"
	big := seq(1, 40000)
	one := func(cmd, result string, code int) (string, []string) {
		return "[" + clEntry(cmd, result, code) + "]", []string{cmd}
	}
	run := func(n int, id, cmd, result string, code int) []string {
		out, cmds := one(cmd, result, code)
		return clRun(n, id, cmds, "completed", out)
	}
	// success: true is Cline's word for a close with code 0.
	ok := func(id, cmd, out string) wantExec {
		return wantExec{id: id, command: cmd, cwd: "/w", outcome: succeeded, exit: code(0), output: out, stdout: str(out), stderr: str("")}
	}
	bad := func(id, cmd, out string, code int32) wantExec {
		return wantExec{id: id, command: cmd, cwd: "/w", outcome: failed, exit: &code, output: out, stdout: str(out), stderr: str("")}
	}
	stderrCase := bad("call_stderr_fail_4", "ls /nonexistent-dir-xyz", "ls: cannot access '/nonexistent-dir-xyz': No such file or directory\n", 2)
	stderrCase.stdout, stderrCase.stderr = str(""), str("ls: cannot access '/nonexistent-dir-xyz': No such file or directory\n")
	runConformance(t, []cs{{
		name: "ls_success_true_is_exit_0", agent: clineAgent, dialect: "cline",
		frames: run(30, "call_ok_1", "ls", ls, 0),
		want:   []wantExec{ok("call_ok_1", "ls", ls)},
	}, {
		name: "exit_3_under_completed_bracket_line_not_output", agent: clineAgent, dialect: "cline",
		frames: run(31, "call_exit3_2", "printf 'a\\nb\\n'; exit 3", "a\nb\n", 3),
		want:   []wantExec{bad("call_exit3_2", "printf 'a\\nb\\n'; exit 3", "a\nb\n", 3)},
	}, {
		name: "stderr_marker_splits_the_streams", agent: clineAgent, dialect: "cline",
		frames: run(32, "call_stderr_3", "echo to-stdout; echo to-stderr >&2; echo more-stdout", "to-stdout\nmore-stdout\n\n[stderr]\nto-stderr\n", 0),
		want: []wantExec{{id: "call_stderr_3", command: "echo to-stdout; echo to-stderr >&2; echo more-stdout", cwd: "/w", outcome: succeeded, exit: code(0),
			output: "to-stdout\nmore-stdout\nto-stderr\n", stdout: str("to-stdout\nmore-stdout\n"), stderr: str("to-stderr\n")}},
	}, {
		name: "missing_directory_stderr_only_exit_2", agent: clineAgent, dialect: "cline",
		frames: run(33, "call_stderr_fail_4", "ls /nonexistent-dir-xyz", "\n[stderr]\nls: cannot access '/nonexistent-dir-xyz': No such file or directory\n", 2),
		want:   []wantExec{stderrCase},
	}, {
		name: "slow_output_comes_whole_at_the_end", agent: clineAgent, dialect: "cline",
		frames: run(34, "call_stream_5", "for i in 1 2 3 4 5; do echo line$i; sleep 0.3; done", "line1\nline2\nline3\nline4\nline5\n", 0),
		want:   []wantExec{ok("call_stream_5", "for i in 1 2 3 4 5; do echo line$i; sleep 0.3; done", "line1\nline2\nline3\nline4\nline5\n")},
	}, {
		name: "big_output_comes_whole", agent: clineAgent, dialect: "cline",
		frames: run(35, "call_big_6", "seq 1 40000", big, 0),
		want:   []wantExec{ok("call_big_6", "seq 1 40000", big)},
	}, {
		name: "bad_utf8_as_cline_decoded_it", agent: clineAgent, dialect: "cline",
		frames: run(36, "call_bad_utf8_7", `printf '\xff\xfe ok\n'`, "\ufffd\ufffd ok\n", 0),
		want:   []wantExec{ok("call_bad_utf8_7", `printf '\xff\xfe ok\n'`, "\ufffd\ufffd ok\n")},
	}, {
		name: "timeout_error_is_timed_out_output_lost", agent: clineAgent, dialect: "cline",
		frames: clRun(37, "call_timeout_8", []string{"sleep 99"}, "completed", `[{"query":"sleep 99","result":"","error":"Command failed: Command timed out after 30000ms","success":false}]`),
		want:   []wantExec{{id: "call_timeout_8", command: "sleep 99", cwd: "/w", outcome: failed, timedOut: true}},
	}, {
		name: "kill_9_reads_as_exit_1", agent: clineAgent, dialect: "cline",
		frames: run(38, "call_kill_9", "echo before-kill; kill -9 $$", "before-kill\n", 1),
		want:   []wantExec{bad("call_kill_9", "echo before-kill; kill -9 $$", "before-kill\n", 1)},
	}, {
		name: "several_commands_one_call_outputs_in_order_last_failing_code", agent: clineAgent, dialect: "cline",
		frames: clRun(39, "call_multi_10", []string{"echo a", "exit 3", "echo b >&2; exit 5"}, "completed",
			"["+clEntry("echo a", "a\n", 0)+","+clEntry("exit 3", "", 3)+","+clEntry("echo b >&2; exit 5", "\n[stderr]\nb\n", 5)+"]"),
		want: []wantExec{{id: "call_multi_10", command: "echo a\nexit 3\necho b >&2; exit 5", cwd: "/w", outcome: failed, exit: code(5), output: "a\nb\n", stdout: str("a\n"), stderr: str("b\n")}},
	}, {
		name: "several_commands_all_succeeded", agent: clineAgent, dialect: "cline",
		frames: clRun(40, "call_multi_11", []string{"echo a", "echo b"}, "completed", "["+clEntry("echo a", "a\n", 0)+","+clEntry("echo b", "b\n", 0)+"]"),
		want:   []wantExec{ok("call_multi_11", "echo a\necho b", "a\nb\n")},
	}, {
		name: "rejected_failed_before_the_tool_call_then_json_string", agent: clineAgent, dialect: "cline",
		frames: []string{
			clPending("call_reject_12", "rm -f notes.txt && echo removed"), clAsk(41, "call_reject_12", "rm -f notes.txt && echo removed"), answer(41, "reject"),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_reject_12","status":"failed"}`),
			clOpen("call_reject_12", "rm -f notes.txt && echo removed"),
			clDone("call_reject_12", "failed", js(`{"error":"User rejected the tool call -- NOT a tool or system failure. Clarify with user before proceeding."}`)),
		},
		want: []wantExec{{id: "call_reject_12", command: "rm -f notes.txt && echo removed", cwd: "/w", outcome: cancelled}},
		revs: func(t *testing.T, resps []*pb.NormalizeResponse) {
			for _, r := range resps {
				if x := r.GetShellExec(); x.GetRevision() > 1 && x.GetState() == pb.ShellState_SHELL_STATE_PENDING && x.GetOutcome() != pb.ShellOutcome_SHELL_OUTCOME_UNSPECIFIED {
					t.Errorf("revision %d went back", x.GetRevision())
				}
			}
		},
	}, {
		name: "client_cancel_command_was_aborted_is_cancelled", agent: clineAgent, dialect: "cline",
		frames: []string{
			clPending("call_cancel_13", "sleep 9"), clAsk(42, "call_cancel_13", "sleep 9"), answer(42, "allow"),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_cancel_13","status":"in_progress"}`),
			clOpen("call_cancel_13", "sleep 9"), clientCancel,
			clDone("call_cancel_13", "completed", `[{"query":"sleep 9","result":"","error":"Command failed: Command was aborted","success":false}]`),
			turnResult(2, "cancelled"),
		},
		want: []wantExec{{id: "call_cancel_13", command: "sleep 9", cwd: "/w", outcome: cancelled}},
	}, {
		name: "the_late_tool_call_never_takes_a_running_call_back", agent: clineAgent, dialect: "cline",
		frames: run(43, "call_order_14", "make", "built\n", 0),
		want:   []wantExec{ok("call_order_14", "make", "built\n")},
		revs: func(t *testing.T, resps []*pb.NormalizeResponse) {
			running := false
			for _, r := range resps {
				x := r.GetShellExec()
				if x.GetState() == pb.ShellState_SHELL_STATE_RUNNING {
					running = true
				}
				if running && x.GetState() == pb.ShellState_SHELL_STATE_PENDING {
					t.Errorf("revision %d is PENDING after RUNNING", x.GetRevision())
				}
			}
		},
	}, {
		name: "a_replay_reads_the_json_string_entry", agent: clineAgent, dialect: "cline",
		frames: []string{
			clOpen("call_exit3_2", "printf 'a\\nb\\n'; exit 3"),
			clDone("call_exit3_2", "completed", js(clEntry("printf 'a\\nb\\n'; exit 3", "a\nb\n", 3))),
		},
		want: []wantExec{bad("call_exit3_2", "printf 'a\\nb\\n'; exit 3", "a\nb\n", 3)},
	}})
}

// cpOpenWith is cpOpen with extra added to rawInput.
func cpOpenWith(id, cmd, desc, extra string) string {
	return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call","toolCallId":%q,"title":%s,"kind":"execute","status":"pending","rawInput":{"command":%s,"description":%s%s}}`, id, js(desc), js(cmd), js(desc), extra))
}

// cpTool is the tool_call of read_bash ({shellId, delay}) or stop_bash
// ({shellId}).
func cpTool(id, tool, shell string) string {
	if tool == "stop_bash" {
		return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call","toolCallId":%q,"title":"Stopping shell session","kind":"execute","status":"pending","rawInput":{"shellId":%q}}`, id, shell))
	}
	return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call","toolCallId":%q,"title":"Reading shell output","kind":"read","status":"pending","rawInput":{"shellId":%q,"delay":1}}`, id, shell))
}

// cpDone is a completed update whose content is text; exit, when not
// nil, is the shell_exit item's exit code.
func cpDone(id, text, shell string, exit *int32) string {
	contents := ""
	if exit != nil {
		contents = fmt.Sprintf(`,"contents":[{"type":"shell_exit","shellId":%q,"exitCode":%d,"cwd":"/w"}]`, shell, *exit)
	}
	return upd(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":%q,"status":"completed","content":[{"type":"content","content":{"type":"text","text":%s}}],"rawOutput":{"content":%s,"detailedContent":%s%s}}`, id, js(text), js(text), js(text), contents))
}

// Copilot CLI 1.0.102's bash tool in async mode (and a sync call past its
// initial wait) ends its own call at once; the command's output and end
// come later, to read_bash (or to the read Copilot makes itself when the
// shell ends, under an id of its own), and stop_bash stops it. Each names
// the shell by the shellId the bash call's result gave. The frames are
// the real ones (recorded; the descriptions, cwd and notices trimmed).
func TestConformanceCopilotShells(t *testing.T) {
	const running = " is still running after 0.7 seconds. The command is still running. Use read_bash to continue waiting for output, or stop_bash to stop it.>"
	runConformance(t, []cs{{
		name: "async_read_to_its_end", agent: copilotAgent,
		frames: []string{
			cpOpenWith("call_a_2", "for i in 1 2 3 4; do echo tick$i; sleep 0.5; done; exit 3", "Ticks", `,"mode":"async"`),
			cpDone("call_a_2", "<command started in background with shellId: 0>", "", nil),
			cpTool("call_a_4", "read_bash", "0"),
			cpDone("call_a_4", "tick1\ntick2\n<command with shellId: 0"+running, "", nil),
			cpTool("call_a_6", "read_bash", "0"),
			cpDone("call_a_6", "tick1\ntick2\ntick3\n<command with shellId: 0"+running, "", nil),
			cpTool("call_a_8", "read_bash", "0"),
			cpDone("call_a_8", "tick1\ntick2\ntick3\ntick4\n<shellId: 0 completed with exit code 3>", "0", code(3)),
			cpTool("call_a_10", "read_bash", "0"),
			cpDone("call_a_10", "\n<shellId: 0 completed with exit code 3>", "0", code(3)),
		},
		want: []wantExec{{id: "call_a_2", command: "for i in 1 2 3 4; do echo tick$i; sleep 0.5; done; exit 3", cwd: "/w", desc: "Ticks", outcome: failed, exit: code(3), bg: true,
			output: "tick1\ntick2\ntick3\ntick4"}},
	}, {
		name: "async_ended_read_by_copilot_itself", agent: copilotAgent,
		frames: []string{
			cpOpenWith("call_b_9", "sleep 2; echo late-end; exit 4", "Late", `,"mode":"async"`),
			cpDone("call_b_9", "<command started in background with shellId: 1>", "", nil),
			cpTool("acbefcdb-3510-4330-a733-e2b5cac4232c", "read_bash", "1"),
			cpDone("acbefcdb-3510-4330-a733-e2b5cac4232c", "late-end\n<shellId: 1 completed with exit code 4>", "1", code(4)),
		},
		want: []wantExec{{id: "call_b_9", command: "sleep 2; echo late-end; exit 4", cwd: "/w", desc: "Late", outcome: failed, exit: code(4), bg: true, output: "late-end"}},
	}, {
		// The same read with no tool_call before it (an id never
		// announced): what it says of the command is still the owner's.
		name: "async_ended_read_under_an_id_never_announced", agent: copilotAgent,
		frames: []string{
			cpOpenWith("call_b_10", "sleep 2; echo late-end; exit 4", "Late", `,"mode":"async"`),
			cpDone("call_b_10", "<command started in background with shellId: 1>", "", nil),
			cpDone("bcbefcdb-3510-4330-a733-e2b5cac4232c", "late-end\n<shellId: 1 completed with exit code 4>", "1", code(4)),
		},
		want: []wantExec{{id: "call_b_10", command: "sleep 2; echo late-end; exit 4", cwd: "/w", desc: "Late", outcome: failed, exit: code(4), bg: true, output: "late-end"}},
	}, {
		name: "async_stopped", agent: copilotAgent,
		frames: []string{
			cpOpenWith("call_c_16", "echo started-s; sleep 30; echo never", "Stop", `,"mode":"async"`),
			cpLive("call_c_16", "started-s\n"),
			cpDone("call_c_16", "<command started in background with shellId: 3>", "", nil),
			cpTool("call_c_18", "read_bash", "3"),
			cpDone("call_c_18", "started-s\n<command with shellId: 3"+running, "", nil),
			cpTool("call_c_20", "stop_bash", "3"),
			cpDone("call_c_20", "<command with id: 3 stopped>", "", nil),
			cpTool("call_c_22", "read_bash", "3"),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"call_c_22","status":"failed","rawOutput":{"message":"shellId: 3 was already stopped via stop_bash.\n\nActive shell sessions:\n  shellId: 1, pid: 9163, mode: async, status: completed, elapsed: 8s, commands: 1, unread output: yes\n    current command: sleep 2; echo late-end; exit 4","code":"failure"}}`),
		},
		want: []wantExec{{id: "call_c_16", command: "echo started-s; sleep 30; echo never", cwd: "/w", desc: "Stop", outcome: failed, bg: true, output: "started-s\n",
			extra: func(t *testing.T, x *pb.ShellExec) {
				if !strings.Contains(x.GetOutcomeReason(), "<command with id: 3 stopped>") {
					t.Errorf("outcome reason %q does not say it was stopped", x.GetOutcomeReason())
				}
			}}},
	}, {
		name: "sync_past_its_initial_wait", agent: copilotAgent,
		frames: []string{
			cpOpenWith("call_d_23", "echo first; sleep 40; echo second", "Long", `,"initial_wait":1`),
			cpLive("call_d_23", "first\n"),
			cpDone("call_d_23", "first\n<command with shellId: 2 is still running after 30 seconds. The command is still running. You will be automatically notified when it completes; if you need the command to complete end your response with no tool calls to wait for the notification. Use stop_bash to stop it.>", "", nil),
			cpTool("call_d_25", "read_bash", "2"),
			cpDone("call_d_25", "first\n<command with shellId: 2 is still running after 2 seconds. The command is still running. You will be automatically notified when it completes; if you need the command to complete end your response with no tool calls to wait for the notification. Use stop_bash to stop it.>", "", nil),
			cpTool("call_d_27", "read_bash", "2"),
			cpDone("call_d_27", "first\nsecond\n<shellId: 2 completed with exit code 0>", "2", code(0)),
		},
		want: []wantExec{{id: "call_d_23", command: "echo first; sleep 40; echo second", cwd: "/w", desc: "Long", outcome: succeeded, exit: code(0), bg: true,
			// Copilot cut the output's last newline before its trailer;
			// the live text, which had it, ended before "second".
			output: "first\nsecond"}},
	}, {
		name: "detached_with_its_own_shell_id", agent: copilotAgent,
		frames: []string{
			cpOpenWith("call_e_16", "echo d1; sleep 2; echo d2; exit 6", "Detached", `,"mode":"async","detach":true,"shellId":"myshell"`),
			cpDone("call_e_16", "<command started in detached background with shellId: myshell>", "", nil),
			cpTool("call_e_18", "read_bash", "myshell"),
			cpDone("call_e_18", "Output:\nd1\n<command with shellId: myshell is still running in detached background after 0.5s. You will be automatically notified when it completes.>", "", nil),
			cpTool("call_e_19", "read_bash", "myshell"),
			cpDone("call_e_19", "Output:\nd1\nd2\n<detached command with shellId: myshell completed with exit code 6>", "myshell", code(6)),
			cpTool("call_e_20", "stop_bash", "myshell"),
			cpDone("call_e_20", "<command with id: myshell had already stopped>", "", nil),
		},
		want: []wantExec{{id: "call_e_16", command: "echo d1; sleep 2; echo d2; exit 6", cwd: "/w", desc: "Detached", outcome: failed, exit: code(6), bg: true, output: "d1\nd2"}},
	}, {
		// A read_bash of a shell whose sync call already ended says
		// nothing new: the call keeps its output and exit code.
		name: "sync_then_read_again", agent: copilotAgent,
		frames: []string{
			cpOpenWith("call_f_12", "echo first; sleep 4; echo second", "Sync", `,"initial_wait":1`),
			cpLive("call_f_12", "first\n"),
			cpLive("call_f_12", "first\nsecond\n"),
			cpDone("call_f_12", "first\nsecond\n<shellId: 2 completed with exit code 0>", "2", code(0)),
			cpTool("call_f_14", "read_bash", "2"),
			cpDone("call_f_14", "\n<shellId: 2 completed with exit code 0>", "2", code(0)),
		},
		want: []wantExec{{id: "call_f_12", command: "echo first; sleep 4; echo second", cwd: "/w", desc: "Sync", outcome: succeeded, exit: code(0), output: "first\nsecond\n"}},
	}, {
		// The model may give a shellId it used before: the newer command
		// owns it from its tool_call, and a read of it is the newer one's.
		name: "a_shell_id_used_again", agent: copilotAgent,
		frames: []string{
			cpOpenWith("call_g_1", "echo one; exit 1", "One", `,"mode":"async","shellId":"s"`),
			cpDone("call_g_1", "<command started in background with shellId: s>", "", nil),
			cpTool("call_g_2", "read_bash", "s"),
			cpDone("call_g_2", "one\n<shellId: s completed with exit code 1>", "s", code(1)),
			cpOpenWith("call_g_3", "echo two; exit 2", "Two", `,"mode":"async","shellId":"s"`),
			cpDone("call_g_3", "<command started in background with shellId: s>", "", nil),
			cpTool("call_g_4", "read_bash", "s"),
			cpDone("call_g_4", "two\n<shellId: s completed with exit code 2>", "s", code(2)),
		},
		want: []wantExec{
			{id: "call_g_1", command: "echo one; exit 1", cwd: "/w", desc: "One", outcome: failed, exit: code(1), bg: true, output: "one"},
			{id: "call_g_3", command: "echo two; exit 2", cwd: "/w", desc: "Two", outcome: failed, exit: code(2), bg: true, output: "two"},
		},
	}})
}

// A command that itself prints "$ " and its own command line first (the
// recorded selfecho step: printf '$ %s\n' "$BASH_EXECUTION_STRING"). The
// core takes such a first line for the echo some agents write before the
// output; pi and Cline never write one, so from them it is the command's
// output and is kept.
func TestConformanceSelfEcho(t *testing.T) {
	const cmd = `printf '$ %s\n' "$BASH_EXECUTION_STRING"; echo second`
	const out = "$ " + cmd + "\nsecond\n"
	runConformance(t, []cs{{
		name: "pi", agent: piAgent,
		frames: piRun("call_selfecho_44", cmd, []string{out}, "completed", ""),
		want:   []wantExec{{id: "call_selfecho_44", command: cmd, cwd: "/w", outcome: succeeded, exit: code(0), output: out}},
	}, {
		name: "cline", agent: clineAgent,
		frames: clRun(1, "call_selfecho_2", []string{cmd}, "completed", "["+clEntry(cmd, out, 0)+"]"),
		want:   []wantExec{{id: "call_selfecho_2", command: cmd, cwd: "/w", outcome: succeeded, exit: code(0), output: out, stdout: &[]string{out}[0], stderr: &[]string{""}[0]}},
	}})
}
