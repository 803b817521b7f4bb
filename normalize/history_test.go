package normalize_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/normalize"
	"github.com/acpnorm/acpnorm/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// History replayed by session/load: the agent sends its earlier updates
// again, often poorer than they were live (no exit code, another title,
// a summary where the output was). A call acpnorm still holds keeps what
// it knew and gets no revision for a replay that adds nothing; a call it
// released gets no FrameError; a call it never saw opens from the replay.

const (
	hLoad       = `{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"S","cwd":"/w","mcpServers":[]}}`
	hLoadResult = `{"jsonrpc":"2.0","id":1,"result":{"modes":null}}`
	hPrompt     = `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"S","prompt":[]}}`
	hResume     = `{"jsonrpc":"2.0","id":1,"method":"session/resume","params":{"sessionId":"S","cwd":"/w","mcpServers":[],"replayFrom":{"type":"start"}}}`
)

func hUpdate(id, fields string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{"sessionUpdate":"tool_call_update","toolCallId":%q,%s}}}`, id, fields)
}

func hOpen(id, fields string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":{"sessionUpdate":"tool_call","toolCallId":%q,%s}}}`, id, fields)
}

// live is a call's live run: exit 3 with output, streamed.
var live = []string{
	hOpen("c1", `"title":"printf a; exit 3","kind":"execute","status":"in_progress","rawInput":{"command":"printf 'a\\nb\\n'; exit 3"}`),
	hUpdate("c1", `"content":[{"type":"content","content":{"type":"text","text":"a\n"}}]`),
	hUpdate("c1", `"status":"failed","rawOutput":{"exit_code":3,"output":"a\nb\n"}`),
}

// poorer is the same call replayed as some agents do: a generic title, no
// command, every call completed, the output only as a summary text.
var poorer = []string{
	hOpen("c1", `"title":"Shell","kind":"execute","status":"pending"`),
	hUpdate("c1", `"status":"completed","content":[{"type":"content","content":{"type":"text","text":"Process exited with code 3"}}]`),
}

func TestSessionLoadReplay(t *testing.T) {
	want := termFinal{command: "printf 'a\\nb\\n'; exit 3", outcome: "FAILED", exit: "3", output: "a\nb\n"}
	cases := []struct {
		name   string
		frames []string
		// sweep: the call is released (past its grace) before the load.
		sweep bool
		want  map[string]termFinal
		revs  uint32 // revisions of c1
	}{{
		name:   "replayed before the load's answer, call still held: nothing changes, no revision",
		frames: concat(live, []string{hLoad}, poorer, []string{hLoadResult}),
		want:   map[string]termFinal{"c1": want},
		revs:   3,
	}, {
		// ACP v2 restores a session with session/resume; replayFrom
		// start replays it as v1's session/load does.
		name:   "ACP v2: session/resume with replayFrom replays, call still held: nothing changes, no revision",
		frames: concat(live, []string{hResume}, poorer, []string{hLoadResult}),
		want:   map[string]termFinal{"c1": want},
		revs:   3,
	}, {
		name:   "replayed after the load's answer (gemini-cli's order): the same",
		frames: concat(live, []string{hLoad, hLoadResult}, poorer, []string{hPrompt}),
		want:   map[string]termFinal{"c1": want},
		revs:   3,
	}, {
		name:   "replay of a released call: no FrameError, no call opened again",
		frames: concat(live, []string{hLoad}, poorer, []string{hLoadResult}),
		sweep:  true,
		want:   map[string]termFinal{"c1": want},
		revs:   3,
	}, {
		name: "a call acpnorm never saw opens from the replay",
		frames: concat([]string{hLoad}, []string{
			hOpen("c9", `"title":"ls","kind":"execute","status":"pending","rawInput":{"command":"ls"}`),
			hUpdate("c9", `"status":"completed","rawOutput":{"exit_code":0,"output":"x\n"}`),
		}, []string{hLoadResult}),
		want: map[string]termFinal{"c9": {command: "ls", cwd: "/w", outcome: "SUCCEEDED", exit: "0", output: "x\n"}},
	}, {
		name: "a replay fills in what the call never knew, and never worsens the rest",
		frames: concat([]string{
			hOpen("c2", `"title":"Run","kind":"execute","status":"in_progress","rawInput":{"command":"make"}`),
			hUpdate("c2", `"status":"completed"`),
			hLoad,
			hOpen("c2", `"title":"make all","kind":"execute","status":"pending","rawInput":{"command":"make all"}`),
			hUpdate("c2", `"status":"failed","rawOutput":{"exit_code":2,"output":"make: *** Error 2\n"}`),
			hLoadResult,
		}),
		want: map[string]termFinal{"c2": {command: "make", cwd: "/w", outcome: "FAILED", exit: "2", output: "make: *** Error 2\n"}},
	}, {
		name: "after the next prompt, frames are live again",
		frames: concat(live, []string{hLoad, hLoadResult, hPrompt},
			[]string{hUpdate("c1", `"content":[{"type":"content","content":{"type":"text","text":"a\nb\nlate output\n"}}]`)}),
		// Live: the agent's output grows (an ended call takes only
		// what extends its output); replayed, it would be dropped.
		want: map[string]termFinal{"c1": {command: want.command, cwd: "/w", outcome: "FAILED", exit: "3", output: "a\nb\nlate output\n"}},
		revs: 4,
	}, {
		name: "a permission ask ends the replay, for a client that does not feed its prompts",
		frames: concat(live, []string{hLoad, hLoadResult,
			`{"jsonrpc":"2.0","id":9,"method":"session/request_permission","params":{"sessionId":"S","toolCall":{"toolCallId":"c5","title":"rm x","kind":"execute","rawInput":{"command":"rm x"}},"options":[{"optionId":"ok","kind":"allow_once"}]}}`,
			hUpdate("c1", `"content":[{"type":"content","content":{"type":"text","text":"a\nb\nlate output\n"}}]`),
		}),
		want: map[string]termFinal{
			"c1": {command: want.command, cwd: "/w", outcome: "FAILED", exit: "3", output: "a\nb\nlate output\n"},
			"c5": {command: "rm x", cwd: "/w", outcome: "UNKNOWN", exit: "nil"},
		},
	}}
	for _, tc := range cases {
		for _, mode := range []string{"memory", "store"} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				now := time.Unix(1e9, 0)
				opts := []normalize.Option{normalize.WithClock(func() time.Time { return now }), normalize.WithGrace(time.Second)}
				if mode == "store" {
					opts = append(opts, normalize.WithStore(store.NewMemory()))
				}
				n := normalize.New(opts...)
				frames := tc.frames
				if tc.sweep {
					// Feed the live run, let its grace pass, sweep.
					k := len(live)
					got, errs := feedSome(t, n, frames[:k])
					require.Empty(t, errs)
					now = now.Add(time.Minute)
					n.Sweep()
					rest, errs := feedSome(t, n, frames[k:])
					assert.Empty(t, errs, "frame errors during the replay")
					assert.Empty(t, rest, "revisions during the replay of a released call")
					for id, w := range tc.want {
						assert.Equal(t, w.String(), withoutRevs(got[id]).String())
					}
					return
				}
				got, errs := feedTerms(t, frames, n)
				assert.Empty(t, errs)
				require.Len(t, got, len(tc.want))
				for id, w := range tc.want {
					g := got[id]
					if tc.revs != 0 {
						assert.Equal(t, tc.revs, g.revisions, "revisions of %s", id)
					}
					assert.Equal(t, w.String(), withoutRevs(g).String(), "call %s", id)
				}
			})
		}
	}
}

func concat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func withoutRevs(f termFinal) termFinal {
	f.revisions = 0
	return f
}

// feedSome feeds frames without closing the session and returns each
// call's last state and the FrameErrors.
func feedSome(t *testing.T, n *normalize.Normalizer, frames []string) (map[string]termFinal, []*normalize.FrameError) {
	t.Helper()
	got := map[string]termFinal{}
	var errs []*normalize.FrameError
	out := map[string]string{}
	for i, f := range frames {
		_, err := n.Feed("s", []byte(f), normalize.WithSequence(uint64(i+1)), normalize.WithEmit(func(ev normalize.Event) error {
			if ev.Error != nil {
				errs = append(errs, ev.Error)
				return nil
			}
			x := ev.ShellExec
			out[x.ToolCallID] = x.Output.Apply(out[x.ToolCallID])
			exit := "nil"
			if x.ExitCode != nil {
				exit = fmt.Sprint(*x.ExitCode)
			}
			got[x.ToolCallID] = termFinal{command: x.Command, cwd: x.Cwd, outcome: x.Outcome.String(), output: out[x.ToolCallID], exit: exit, signal: x.Signal,
				truncated: x.Output != nil && x.Output.Truncated, revisions: x.Revision}
			return nil
		}))
		require.NoError(t, err)
	}
	return got, errs
}

// A session the stream first sees loaded (session/load, not session/new)
// has the load's cwd: a call's relative cwd is resolved against it, and a
// call without one runs there, as in a session made by session/new.
func TestLoadedSessionCwd(t *testing.T) {
	load := `{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"S","cwd":"/proj","mcpServers":[]}}`
	got, errs := feedSome(t, normalize.New(), []string{
		load, hLoadResult, hPrompt,
		hOpen("rel", `"title":"make","kind":"execute","status":"in_progress","rawInput":{"command":"make","cwd":"sub"}`),
		hUpdate("rel", `"status":"completed","rawOutput":{"exit_code":0,"output":"ok\n"}`),
	})
	require.Empty(t, errs)
	assert.Equal(t, "/proj/sub", got["rel"].cwd)
}
