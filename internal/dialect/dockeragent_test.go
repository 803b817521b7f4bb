package dialect

import (
	"encoding/json"
	"testing"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dockerFinal is docker-agent's final update: the tool's result text as
// content and as rawOutput.content.
func dockerFinal(status, result string) string {
	return `{"sessionUpdate":"tool_call_update","toolCallId":"d1","status":"` + status + `","content":[{"type":"content","content":{"type":"text","text":` + quoteJSON(result) + `}}],"rawOutput":{"content":` + quoteJSON(result) + `}}`
}

func TestDockerAgentUpdate(t *testing.T) {
	d, ok := Lookup("docker-agent")
	require.True(t, ok)
	runObsCases(t, d, []obsCase{
		{
			name:   "tool_call: title Shell is not the command; rawInput.cmd is, with its cwd and description",
			update: `{"sessionUpdate":"tool_call","toolCallId":"d1","title":"Shell","kind":"execute","status":"pending","rawInput":{"cmd":"ls -la","cwd":"sub","timeout":2,"description":"List"}}`,
			want:   []accum.Observation{{ToolCallID: "d1", Opens: true, Shell: accum.ShellYes, Status: accum.StatusPending, Command: "ls -la", Cwd: "sub", Description: "List"}},
		},
		{
			name:   "the command alias the tool accepts",
			update: `{"sessionUpdate":"tool_call","toolCallId":"d1","title":"Shell","kind":"execute","status":"in_progress","rawInput":{"command":"make"}}`,
			want:   []accum.Observation{{ToolCallID: "d1", Opens: true, Shell: accum.ShellYes, Status: accum.StatusRunning, Command: "make"}},
		},
		{
			name:   "exit 0: the output alone, proof of success, no exit code",
			update: dockerFinal("completed", "alpha.txt\nbeta.md"),
			want: []accum.Observation{{ToolCallID: "d1", Status: accum.StatusCompleted, Succeeded: true,
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "alpha.txt\nbeta.md")}}},
		},
		{
			name:   "exit 0 without output",
			update: dockerFinal("completed", "<no output>"),
			want:   []accum.Observation{{ToolCallID: "d1", Status: accum.StatusCompleted, Succeeded: true}},
		},
		{
			name:   "Error executing command: exit status 2 is exit 2; only what follows Output: is output",
			update: dockerFinal("completed", "Error executing command: exit status 2\nOutput: ls: cannot access '/nonexistent-dir-xyz': No such file or directory"),
			want: []accum.Observation{{ToolCallID: "d1", Status: accum.StatusCompleted, Exit: ex(2, accum.ExitText, false),
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "ls: cannot access '/nonexistent-dir-xyz': No such file or directory")}}},
		},
		{
			name:   "a nonzero exit without output (Output: trimmed to nothing)",
			update: dockerFinal("completed", "Error executing command: exit status 3\nOutput:"),
			want:   []accum.Observation{{ToolCallID: "d1", Status: accum.StatusCompleted, Exit: ex(3, accum.ExitText, false)}},
		},
		{
			name:   "a report without its Output: line is still a report: exit 3, never success, never output",
			update: dockerFinal("completed", "Error executing command: exit status 3"),
			want:   []accum.Observation{{ToolCallID: "d1", Status: accum.StatusCompleted, Exit: ex(3, accum.ExitText, false)}},
		},
		{
			name:   "a report whose Output: is not where the tool writes it keeps only the output",
			update: dockerFinal("completed", "Error executing command: exit status 3\n\nOutput:a\nb"),
			want: []accum.Observation{{ToolCallID: "d1", Status: accum.StatusCompleted, Exit: ex(3, accum.ExitText, false),
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "a\nb")}}},
		},
		{
			// The tool always writes "Output:" under its report line: a
			// report line followed by other text may be a line the
			// command printed (a Go program's log, say), so it is output;
			// but it reads like a report, so no success is claimed.
			name:   "a report line followed by text with no Output: line is output, and no success",
			update: dockerFinal("completed", "Error executing command: exit status 1\nretrying...\nok"),
			want: []accum.Observation{{ToolCallID: "d1", Status: accum.StatusCompleted,
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "Error executing command: exit status 1\nretrying...\nok")}}},
		},
		{
			name:   "a timeout report line followed by text with no Output: line is output",
			update: dockerFinal("completed", "Command timed out after 2s\nretrying...\nok"),
			want: []accum.Observation{{ToolCallID: "d1", Status: accum.StatusCompleted, Succeeded: true,
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "Command timed out after 2s\nretrying...\nok")}}},
		},
		{
			name:   "a timeout report without its Output: line",
			update: dockerFinal("completed", "Command timed out after 2s"),
			want:   []accum.Observation{{ToolCallID: "d1", Status: accum.StatusCompleted, TimedOut: true}},
		},
		{
			name:   "multi-line output after Output: is kept whole, an Output: line inside it too",
			update: dockerFinal("completed", "Error executing command: exit status 1\nOutput: a\nOutput: b\nc"),
			want: []accum.Observation{{ToolCallID: "d1", Status: accum.StatusCompleted, Exit: ex(1, accum.ExitText, false),
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "a\nOutput: b\nc")}}},
		},
		{
			name:   "signal: killed is SIGKILL, exit unknown",
			update: dockerFinal("completed", "Error executing command: signal: killed\nOutput: before-kill"),
			want: []accum.Observation{{ToolCallID: "d1", Status: accum.StatusCompleted, Signal: "SIGKILL",
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "before-kill")}}},
		},
		{
			name:   "signal: segmentation fault (core dumped)",
			update: dockerFinal("completed", "Error executing command: signal: segmentation fault (core dumped)\nOutput:"),
			want:   []accum.Observation{{ToolCallID: "d1", Status: accum.StatusCompleted, Signal: "SIGSEGV"}},
		},
		{
			name:   "Command timed out after 2s: timed out; the output before it is output",
			update: dockerFinal("completed", "Command timed out after 2s\nOutput: start"),
			want: []accum.Observation{{ToolCallID: "d1", Status: accum.StatusCompleted, TimedOut: true,
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "start")}}},
		},
		{
			name:   "Command cancelled: cancelled, no output",
			update: dockerFinal("completed", "Command cancelled"),
			want:   []accum.Observation{{ToolCallID: "d1", Status: accum.StatusCompleted, Cancelled: true, CancelNotice: "Command cancelled"}},
		},
		{
			name:   "a rejected ask",
			update: dockerFinal("completed", "The user rejected the tool call. Reason: not now"),
			want:   []accum.Observation{{ToolCallID: "d1", Status: accum.StatusCompleted, Cancelled: true, CancelNotice: "The user rejected the tool call. Reason: not now"}},
		},
		{
			name:   "newer builds: failed for a rejection",
			update: dockerFinal("failed", "The user rejected the tool call."),
			want:   []accum.Observation{{ToolCallID: "d1", Status: accum.StatusFailed, Cancelled: true, CancelNotice: "The user rejected the tool call."}},
		},
		{
			name:   "an interrupted turn",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"d1","status":"failed","content":[{"type":"content","content":{"type":"text","text":"Tool call interrupted before a result was available; side effects may have occurred."}}]}`,
			want:   []accum.Observation{{ToolCallID: "d1", Status: accum.StatusFailed, Cancelled: true, CancelNotice: "Tool call interrupted before a result was available; side effects may have occurred."}},
		},
		{
			name:   "the tool could not start the command: failed, not output",
			update: dockerFinal("failed", "Error starting command: fork/exec /bin/sh: no such file or directory"),
			want:   []accum.Observation{{ToolCallID: "d1", Status: accum.StatusFailed, Failed: true}},
		},
		{
			name:   "truncated: the head, marked",
			update: dockerFinal("completed", "1\n2\n3\n\n[Output truncated: exceeded 30,000 character limit]"),
			want: []accum.Observation{{ToolCallID: "d1", Status: accum.StatusCompleted, Succeeded: true,
				Texts: []accum.Text{{Stream: accum.Combined, Kind: accum.Final, Text: "1\n2\n3", Truncated: true, Head: true}}}},
		},
		{
			name:   "output that merely mentions the report's words is output",
			update: dockerFinal("completed", "Command timed out after 2s (retrying)\nok"),
			want: []accum.Observation{{ToolCallID: "d1", Status: accum.StatusCompleted, Succeeded: true,
				Texts: []accum.Text{txt(accum.Combined, accum.Final, "Command timed out after 2s (retrying)\nok")}}},
		},
		{
			name:   "a background job: background, the notice is not output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"d1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"Background job started with ID: job_1_1\nCommand: npm start\nWorking directory: ."}}],"rawOutput":{"content":"Background job started with ID: job_1_1\nCommand: npm start\nWorking directory: ."}}`,
			want:   []accum.Observation{{ToolCallID: "d1", Status: accum.StatusCompleted, Background: true}},
		},
		{
			name:   "the background tool's tool_call",
			update: `{"sessionUpdate":"tool_call","toolCallId":"d2","title":"Background Job","kind":"execute","status":"pending","rawInput":{"cmd":"npm start"}}`,
			want:   []accum.Observation{{ToolCallID: "d2", Opens: true, Shell: accum.ShellYes, Background: true, Status: accum.StatusPending, Command: "npm start"}},
		},
		{
			name:   "another execute tool (an MCP run_* tool) is not a shell",
			update: `{"sessionUpdate":"tool_call","toolCallId":"m1","title":"run_tests","kind":"execute","status":"pending","rawInput":{"suite":"all"}}`,
			want:   []accum.Observation{{ToolCallID: "m1", Opens: true, Shell: accum.ShellNo, Status: accum.StatusPending}},
		},
		{
			name:   "a live frame's content is not output",
			update: `{"sessionUpdate":"tool_call_update","toolCallId":"d1","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"List"}}]}`,
			want:   []accum.Observation{{ToolCallID: "d1", Status: accum.StatusRunning}},
		},
	})
}

func TestDockerAgentPermissionAndDetection(t *testing.T) {
	d, ok := Lookup("docker-agent")
	require.True(t, ok)
	runObsCases(t, d, []obsCase{{
		name: "the ask, before the tool_call: the command from rawInput.cmd",
		ask:  `{"toolCallId":"d1","title":"Shell","kind":"execute","status":"pending","rawInput":{"cmd":"rm -f notes.txt && echo removed"}}`,
		want: []accum.Observation{{ToolCallID: "d1", Shell: accum.ShellYes, Status: accum.StatusPending, PermissionAsk: true, Command: "rm -f notes.txt && echo removed"}},
	}})
	for _, name := range []string{"docker agent", "Docker Agent", "cagent", "docker-agent"} {
		assert.Equal(t, "docker-agent", Detect(name).Info().Name, name)
	}
	assert.Equal(t, GenericName, Detect("docker").Info().Name)

	sign := func(update string) string {
		f, err := Read(Generic(), []byte(upd(update)))
		require.NoError(t, err)
		return f.Sign
	}
	assert.Equal(t, "docker-agent", sign(`{"sessionUpdate":"tool_call","toolCallId":"d1","title":"Shell","kind":"execute","status":"pending","rawInput":{"cmd":"ls"}}`))
	assert.Empty(t, sign(`{"sessionUpdate":"tool_call","toolCallId":"q1","title":"Shell","kind":"execute","status":"pending","rawInput":{},"_meta":{"toolName":"run_shell_command"}}`), "Qwen's Shell call")
	assert.Empty(t, sign(`{"sessionUpdate":"tool_call","toolCallId":"d1","title":"Shell","kind":"execute","status":"pending","rawInput":{"command":"ls"}}`))
	assert.Empty(t, sign(`{"sessionUpdate":"tool_call_update","toolCallId":"d1","title":"Shell","kind":"execute","rawInput":{"cmd":"ls"}}`))
}

// quoteJSON writes s as a JSON string.
func quoteJSON(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestDockerAgentKnownTools: docker-agent gives the kind execute to the
// permission ask of every tool that is not read-only, to its
// max-iterations ask, and to the tool_call of every tool named shell,
// run_* or exec_* (docker/docker-agent pkg/acp/agent.go,
// buildToolCallUpdate, handleMaxIterationsReached, determineToolKind): a
// frame that names another tool than its shell tools, with no command,
// is no shell it missed (no shell_unread), and its own shell tools still
// are shells; a frame that names no tool says what its kind says.
func TestDockerAgentKnownTools(t *testing.T) {
	d := mustDialect(t, "docker-agent")
	ask := func(tc string) []accum.Observation {
		f, err := Read(d, []byte(`{"jsonrpc":"2.0","id":3,"method":"session/request_permission","params":{"sessionId":"s","options":[],"toolCall":`+tc+`}}`))
		require.NoError(t, err)
		return f.Observations
	}
	for _, c := range []struct {
		name  string
		obs   []accum.Observation
		shell accum.Shell
		want  []accum.Unrecognized
	}{
		{"the ask of a tool that writes", ask(`{"toolCallId":"call_w1","title":"write_file","kind":"execute","status":"pending","rawInput":{"path":"a.txt","content":"x"}}`),
			accum.ShellNo, nil},
		{"the ask of an MCP tool with a title", ask(`{"toolCallId":"call_g1","title":"Create Issue","kind":"execute","status":"pending","rawInput":{"repo":"a/b","title":"t"}}`),
			accum.ShellNo, nil},
		{"the max-iterations ask", ask(`{"toolCallId":"max_iterations","title":"Maximum iterations (20) reached","kind":"execute","status":"pending"}`),
			accum.ShellNo, nil},
		{"an MCP run_* tool", readUpdate(t, d, `{"sessionUpdate":"tool_call","toolCallId":"m1","title":"run_tests","kind":"execute","status":"pending","rawInput":{"suite":"all"}}`),
			accum.ShellNo, nil},
		{"the shell tool's ask", ask(`{"toolCallId":"d1","title":"Shell","kind":"execute","status":"pending","rawInput":{"cmd":"ls"}}`),
			accum.ShellYes, nil},
		{"the background job tool", readUpdate(t, d, `{"sessionUpdate":"tool_call","toolCallId":"d2","title":"Background Job","kind":"execute","status":"pending","rawInput":{"cmd":"npm start"}}`),
			accum.ShellYes, nil},
		{"a command under a kind no shell has", readUpdate(t, d, `{"sessionUpdate":"tool_call","toolCallId":"r1","title":"Runner","kind":"read","status":"pending","rawInput":{"cmd":"ls"}}`),
			accum.ShellNo, []accum.Unrecognized{{What: accum.UnrecognizedShell, Field: "rawInput.cmd"}}},
		{"a frame that names no tool", readUpdate(t, d, `{"sessionUpdate":"tool_call","toolCallId":"x1","kind":"execute","status":"pending"}`),
			accum.ShellUnknown, []accum.Unrecognized{{What: accum.UnrecognizedShell, Field: "kind"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Len(t, c.obs, 1)
			assert.Equal(t, c.shell, c.obs[0].Shell)
			assert.Equal(t, c.want, c.obs[0].Unrecognized)
		})
	}
}

// A build that rewords its failure report: the text is no longer one the
// dialect reads, but it still reads like a report, so it is never taken
// for the output of an exit 0. The exit is unknown, the text kept as
// sent, and the wire change is said: by the session, for an exit line
// left at the head of the output (accum.Call.ExitLineHeld), by the
// dialect for a JSON result.
func TestDockerAgentRewordedReportIsNoSuccess(t *testing.T) {
	d, ok := Lookup("docker-agent")
	require.True(t, ok)
	for _, c := range []struct {
		name, text string
		exitLine   bool // the session says it: an exit line at the output's head
		said       []accum.Unrecognized
	}{
		{"another verb", "Error running command: exit status 3\nOutput: a\nb", true, nil},
		{"another sentence", "Command failed with exit code 3\nOutput: a\nb", true, nil},
		{"the exit line alone", "Process exited with code 3", true,
			[]accum.Unrecognized{{What: accum.UnrecognizedResult, Field: "content text"}}},
		{"a result block's line at the end", "a\nb\n\nExit Code: 3", true,
			[]accum.Unrecognized{{What: accum.UnrecognizedResult, Field: "content text"}}},
		{"a JSON result", `{"exit_code":3,"output":"a\nb"}`, false,
			[]accum.Unrecognized{{What: accum.UnrecognizedResult, Field: "rawOutput.content"}}},
		{"a JSON result, camel case", `{"output": "a\nb", "exitCode": "3"}`, false,
			[]accum.Unrecognized{{What: accum.UnrecognizedResult, Field: "rawOutput.content"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			obs, err := readCase(d, dockerFinal("completed", c.text), "")
			require.NoError(t, err)
			require.Len(t, obs, 1)
			o := obs[0]
			assert.False(t, o.Succeeded, "a reworded report is no proof of exit 0")
			assert.Nil(t, o.Exit)
			assert.False(t, o.Failed)
			assert.Equal(t, []accum.Text{txt(accum.Combined, accum.Final, c.text)}, o.Texts, "the text is kept as sent")
			assert.Equal(t, c.said, o.Unrecognized)

			call := accum.NewCall("d1", 1<<20)
			open := readUpdate(t, d, `{"sessionUpdate":"tool_call","toolCallId":"d1","title":"Shell","kind":"execute","status":"pending","rawInput":{"cmd":"./run.sh"}}`)
			call.Apply(&open[0])
			call.Apply(&o)
			r, ok := call.Revision()
			require.True(t, ok)
			assert.Equal(t, accum.Unknown, r.Outcome)
			assert.Equal(t, c.exitLine, call.ExitLineHeld())
		})
	}
	// A result block in rawOutput.content alone (no content text, which
	// the frame's walk would look at) is said by the dialect, from there.
	obs, err := readCase(d, `{"sessionUpdate":"tool_call_update","toolCallId":"d1","status":"completed","rawOutput":{"content":"a\nb\n\nExit Code: 3"}}`, "")
	require.NoError(t, err)
	require.Len(t, obs, 1)
	assert.False(t, obs[0].Succeeded)
	assert.Nil(t, obs[0].Exit)
	assert.Equal(t, []accum.Text{txt(accum.Combined, accum.Final, "a\nb\n\nExit Code: 3")}, obs[0].Texts)
	assert.Equal(t, []accum.Unrecognized{{What: accum.UnrecognizedResult, Field: "rawOutput.content"}}, obs[0].Unrecognized)
	// Output that only mentions such words further down is still the
	// output of an exit 0.
	obs, err = readCase(d, dockerFinal("completed", "building\nexit code 3 is retried\nok"), "")
	require.NoError(t, err)
	assert.True(t, obs[0].Succeeded)
	obs, err = readCase(d, dockerFinal("completed", `{"name":"x","status":"ok"}`), "")
	require.NoError(t, err)
	assert.True(t, obs[0].Succeeded, "a JSON output without an exit member")
	assert.Empty(t, obs[0].Unrecognized)
}
