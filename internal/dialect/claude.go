package dialect

import (
	"bytes"
	"cmp"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/acpnorm/acpnorm/internal/jsonlit"
)

// claude reads the Claude Code ACP adapters (@zed-industries/claude-code-acp,
// now @agentclientprotocol/claude-agent-acp).
//
//   - Only the Bash tool is a shell: `_meta.claudeCode.toolName` (or the
//     unstable `name`) "Bash" says yes, any other tool name says no.
//   - The title is "Terminal" while the input streams: never a command. A
//     title in backticks ("`ls`", old adapter) is unquoted; rawInput.command
//     wins over the title.
//   - The old adapter sends `tool_call` twice with the same id (first with
//     rawInput {}, then with the command and the description as content):
//     both frames open the same call and say nothing contradictory.
//   - Content text is the DESCRIPTION while the call runs, never output. On
//     a frame that ends the call, rawOutput (a string) is the output; the
//     fenced content text is used only when rawOutput is absent.
//   - With the capability the whole output arrives once in
//     `_meta.terminal_output` (or `terminal_output_delta`): it is read as a
//     Snapshot (whole output so far), not appended, so a repeat is harmless.
//   - On failure the text starts with "Exit code N": exit N from a text
//     marker (a real value, the command has finished when Claude writes it),
//     and the header line is not output. `_meta.terminal_exit` beats it.
//     claude-code-acp 0.8.0's and 0.9.0's Claude Code write no such header
//     (see claudeNewWordsSince): there the line is the command's output. A
//     `completed` Bash final says no header was written (a success:
//     Observation.ExitWordsOutput), so a header read on an earlier frame
//     without a status, a session/load replay's terminal_output with no
//     toolResponse before it, was the command's first line.
//   - Success without the capability has no exit code anywhere: the exit
//     stays UNKNOWN. The success-only `_meta.claudeCode.toolResponse` update
//     is not taken as a proof of success (the field guide says exit unknown).
//   - toolResponse {stdout, stderr}: Claude's Bash merges stderr into
//     stdout in the builds seen (stderr ""), so the streams are reported as
//     separate only when stderr is non-empty; otherwise stdout is the whole
//     output (a Snapshot), often more than the content's preview. `interrupted: true` means the
//     user interrupted the command: Cancelled. `backgroundTaskId` means the
//     command went on in the background: Background (with `timedOutAfterMs`
//     it was moved there by its timeout; it was not stopped, so TimedOut
//     stays false). Heartbeats (`elapsedTimeSeconds`) carry no output.
//   - "<persisted-output>...Preview (first 2KB):\n...</persisted-output>":
//     the preview, Truncated and a Head, so it never replaces the whole
//     output toolResponse gave. A trailing "[Output truncated (N bytes
//     total): full output saved to PATH]" is removed, marks the output
//     Truncated (a Head) and states its real size (TotalBytes N). The older Bash tool's
//     "\n\n... [N lines truncated] ..." after its first 30,000 characters
//     (claude-code-acp 0.11.0, in toolResponse stdout and the content) is
//     removed too and marks the output Truncated (a Head); it states lines,
//     not bytes, so the size stays unknown. After fewer than 30,000
//     characters those words are what the command printed: output.
//   - Notices where output goes: "User refused permission to run tool" (a
//     rejection), "The user doesn't want to proceed with this tool use
//     ..." (claude-agent-acp's cancel) and "[Request interrupted by user
//     ...]" are Cancelled with the notice quoted, never output (they come
//     under `failed`, or before the status: on a `completed` frame the
//     same words are output);
//     `_meta.claudeCode.nonExecutionKind` "user-rejected" or
//     "permission-rule" is Cancelled too. claude-agent-acp before
//     0.32.0 replays a command the user interrupted as Claude Code kept
//     it, under `failed`: "Exit code 137", then "[Request interrupted by
//     user for tool use]", then the output so far; that line is read as
//     the cancel there only (claude.interruptLine), the exit kept.
//   - "Command running in background with ID: X. ..." and, as the last
//     line, "Command did not complete within its Ns timeout and was moved
//     to the background (ID: X). ..." are notices, not output: Background.
//     "Command timed out after ..." (older builds that killed the command
//     and reported an error) is TimedOut under an "Exit code N" header
//     only. Each notice is read only in the shape Claude writes it: a
//     session/load replay (no toolResponse) sends the output alone, where
//     other lines like these are what the command printed.
//   - To a client that declares JetBrains AIR (`_meta.jetbrains.air` in the
//     clientCapabilities of its initialize request; see claudeAirClient)
//     every build makes `terminal_exit.exit_code` up, so it is set aside
//     (exitMadeUp); the "Exit code N" header is the exit.
//     `_meta.jetbrains.air.commandTitle` is the description, and makes the
//     title of a report without rawInput or kind the command.
//   - A session/load replay of claude-agent-acp from 0.86.0 fills
//     `terminal_exit.exit_code` with 0 for every result not flagged as an
//     error, a nonzero exit Claude Code read as a success (grep's "No
//     matches found") too; it sends the terminal content item beside it,
//     which live frames leave out: that 0 is no exit code
//     (claudeRestatedZero).
//   - Live, the same builds fill in that 0 wherever they render a Bash
//     result without Claude Code's structured result (its dist, 0.86.0
//     and 0.101.0: `exitCode = isError ? undefined : 0`, cleared only by
//     the structured `returnCodeInterpretation`, `interrupted` or
//     `backgroundTaskId`): a user message with more than one tool_result
//     (the adapter cannot tell whose the message's `tool_use_result` is),
//     one without `tool_use_result`, a result whose structured `isImage`
//     is set, and in 0.101.0 a subagent's message it took its launch
//     result out of and a cancel's results sent for part of a message.
//     (Claude Code in 0.86.0, 0.95.0 and 0.101.0 sets `isImage` only once
//     it made an image of the output, and sends that image, which the
//     adapter passes on as content with no terminal_exit.)
//     A nonzero exit Claude Code read as a success is then sent as 0.
//     Nothing on the frame tells that 0 from a real one: the final is the
//     same (`_meta.claudeCode.toolName`, terminal_exit, `completed`, the
//     terminal content item dropped by the adapter's field tracker, no
//     rawOutput), and the output frame before it differs only in its text
//     (Claude Code's text for the model instead of stdout and stderr).
//     The only sign is on another frame, the success-only toolResponse
//     (sent whole to a client neither AIR nor, from 0.101.0, on ACP v2),
//     which holds `returnCodeInterpretation`; a frame is read alone, so
//     that 0 is read as the exit code (an agent limit: no observation
//     carries "a later 0 is not this command's" to the final). Claude Code 2.1.318 (Claude Agent
//     SDK 0.3.318, 0.101.0's) streams one message per content block, so
//     the first case does not come from its main stream.
//   - "Shell cwd was reset to DIR", Claude Code's line after the stderr
//     of a command that changed directory, is a notice: removed only as
//     the whole last line naming an absolute path (claudeCwdReset). It is
//     no part of the whole an "Exit code N" first line is measured
//     against: toolResponse's stdout proves that line output, and a
//     `completed` final puts it back, also before the notice.
//   - "(Bash completed with no output)", Claude Code's text for a result
//     without output, and the adapter's notices for a call it closed
//     without a result ("Claude stopped this tool call before it ran.",
//     ...) are no output.
//   - ACP v2 (an initialize with protocolVersion 2; recorded for 0.101.0,
//     variant v2_terminal-meta): the terminal _meta becomes terminal_update
//     (an upsert: `command`, `output.data` the base64 of v1's
//     terminal_output text, `exitStatus {exitCode, signal}` the
//     terminal_exit's) and terminal_output_chunk; tool calls are upserting
//     tool_call_updates (`name` "Bash"; `_meta.claudeCode` only for
//     `nonExecutionKind`: no toolName, no toolResponse); a turn ends with
//     a state_update idle; the session is restored with session/resume
//     (replayFrom start replays it). A terminal_update without output,
//     exitStatus or cwd (the terminal announced, the rawInput command
//     restated, terminal/cancel offered) comes before the tool call that
//     shows the terminal, or says only what the call's frames say: no
//     observation (claudeTerminalAnnounced). The output text holds v1's
//     header, notices and trailers, read as v1's (claudeTerminalBytes);
//     a text with words removed stays text beside them (Text.Whole), so
//     a `completed` final puts an "Exit code N" first line back.
//     exitStatus is set aside where it is made up (exitMadeUp); a 0 is
//     evidence only live (Observation.ExitLiveOnly): the replay's made-up
//     0 comes before the tool_call_update with the terminal item, where
//     claudeRestatedZero cannot see it.
//   - With a client terminal (the client offers `terminal: true`),
//     claude-code-acp runs Bash as the MCP tool `mcp__acp__Bash`: a shell
//     like Bash. It runs the command with terminal/create (the whole line,
//     no args or cwd, outputByteLimit 32000), which the core reads, and its
//     result text is a header ("Exited with code N.", "Signal `S`. ",
//     "Interrupted by the user. " for an exit with no code, "Timed out. ",
//     then "Final output:" or "New output:") before the terminal's output
//     and, when the client cut it, "Command output was too long, so it was
//     truncated to N bytes.": the header and that note are notices (exit N,
//     the signal, TimedOut; the output truncated, the client's tail), the
//     rest restates the terminal's output. "Tool cancelled by user" is its
//     cancel notice; "Command started in background with id: T" is
//     Background. These words are read only on a frame that names
//     mcp__acp__Bash (all of its results do): in the Bash tool's output,
//     replayed without toolResponse, they are what the command printed.
type claude struct {
	// exitMadeUp: this build, for this client, fills
	// `_meta.terminal_exit.exit_code` with a value of its own, not the
	// command's. claude-agent-acp before 0.86.0 does for every client: 1
	// for every result Claude Code flagged as an error, a rejected call
	// too, and 0 for every other, a command moved to the background by its
	// timeout too. Every build does for a client that declares JetBrains
	// AIR (see claudeAirClient): 1 for an error or an interrupted command,
	// 1 for a call that got no result, else the exit code, or 0 when it
	// has none (a command moved to the background, a nonzero exit Claude
	// Code reads as success, such as grep's "No matches found"). That
	// field is then no exit evidence; the agent's own "Exit code N" header
	// is.
	exitMadeUp bool
	// oldWords: this build's Claude Code writes none of the words newer
	// builds add to a Bash result, and its adapter none of
	// claude-agent-acp's (claude-code-acp before claudeNewWordsSince): no
	// "Exit code N" header, no empty-result notice, no moved-to-background
	// notice, no bracketed interrupt line, no truncation note, no
	// persisted-output preview, no notice of a call without a result.
	// With no toolResponse to hold the output whole, those words are what
	// the command printed.
	oldWords bool
	// interruptLine: this build's Claude Code keeps a Bash call the user
	// interrupted as an error result, its "Exit code N" header, then the
	// line "[Request interrupted by user for tool use]", then the output
	// so far, which a session/load replay sends under `failed`
	// (claude-agent-acp from its first build to before
	// claudeInterruptLineUntil; see claudeInterruptLine).
	interruptLine bool
	// unnamed: the session names no build (no agentInfo.version) and its
	// client is not JetBrains AIR. claude-code-acp before 0.6.9 (0.2.5,
	// 0.4.5 and 0.4.7 recorded; Claude Code 1.0 through its own SDK) sends
	// no agentInfo, and ends a Bash call with no `_meta` at all, where
	// every later build puts `_meta.claudeCode` on its results (but to an
	// AIR client: claude-agent-acp 0.101.0 then ends some with no
	// `_meta`). On such a session a final with no `_meta` is read as
	// those builds write it (see claudePreSDK).
	unnamed bool
}

func init() { register(claude{}) }

// forPeers reads builds before claudeExitTruthful, and every build talking
// to a JetBrains AIR client, with their made-up terminal_exit set aside;
// an unknown build is read as the newest.
func (claude) forPeers(v Version, c Client) Dialect {
	return claude{
		exitMadeUp:    v.Before(claudeExitTruthful) || claudeAirClient(c),
		oldWords:      v.Before(claudeNewWordsSince),
		interruptLine: !v.Before(claudeAgentFirst) && v.Before(claudeInterruptLineUntil),
		unnamed:       !v.Known() && !claudeAirClient(c),
	}
}

// claudeAgentFirst is claude-agent-acp's first build on npm. Every
// claude-code-acp build is numbered below it (the last is 0.16.2).
const claudeAgentFirst = "0.24.2"

// claudeInterruptLineUntil is the first claude-agent-acp build seen whose
// Claude Code no longer writes claudeInterruptLine after an interrupted
// command's "Exit code N" header: 0.32.0 (Claude Code 2.1.126), the build
// npm has next after 0.31.4. 0.24.2 and 0.31.4 (Claude Code 2.1.84,
// 2.1.121) write the line; 0.32.0, 0.33.1, 0.35.0 and 0.37.0 keep the
// header and the output alone (nothing on the call's frames says the user
// stopped it: read as the failure it looks like), 0.39.0 and 0.40.0 the
// refusal text alone ("The user doesn't want to proceed with this tool
// use. ..."). claude-code-acp is left out (claudeAgentFirst): none of its
// builds was recorded replaying a real cancel.
const claudeInterruptLineUntil = "0.32.0"

// claudeInterruptLine is Claude Code's mark of a tool call the user
// interrupted. Before claudeInterruptLineUntil it is the first line after
// the "Exit code N" header of an interrupted Bash call's result (exit
// 137: the shell was killed), the output so far after it. Newer builds
// send the same bytes only for a failed command that printed that line
// first: there it is output.
const claudeInterruptLine = "[Request interrupted by user for tool use]"

// claudeNewWordsSince is the first claude-code-acp build whose Claude Code
// writes the newer words, the build npm published after the last one seen
// writing none of them (oldWords). 0.8.0 and 0.9.0 bundle Claude Code
// 0.1.27 (@anthropic-ai/claude-agent-sdk), whose Bash tool returns a
// failure's output alone (the adapter fences it in the content text under
// `failed`: no exit code anywhere), writes "<error>Command was aborted
// before completion</error>" for an interrupt and "Command running in
// background with ID: X" for a timeout, and nothing of the others; both
// send no _meta, so no toolResponse. Every 0.10 build on npm, 0.10.2 to
// 0.10.10 (Claude Code 0.1.37 to 0.1.55), and 0.11.0 (0.1.57) write the
// header and send toolResponse; npm has no 0.10.0 or 0.10.1. 0.6.10
// (Agent SDK 0.1.26) sends 0.8.0's frames; 0.4.7 (Claude Code 1.0.128)
// sends no Bash result but through a client terminal.
// claude-agent-acp's builds are all numbered above this (its first is
// 0.24.2).
const claudeNewWordsSince = "0.10.2"

// claudeAirClient says whether claude-agent-acp treats the client as
// JetBrains AIR: its clientCapabilities hold an object at
// `_meta.jetbrains.air` (the adapter's isAirClient, 0.101.0; it reads
// nothing else to decide). Such a client gets another wire: the made-up
// exit codes above, the description under
// `_meta.jetbrains.air.commandTitle`, no `rawInput` while the input
// streams, no terminal content item on the result.
func claudeAirClient(c Client) bool { return c.object("_meta", "jetbrains", "air") }

// claudeRestatedZero says whether the frame's terminal_exit exit code is a
// 0 the adapter filled in, which builds from claudeExitTruthful do for a
// result it renders without Claude Code's structured result: they take
// a success's 0 from that result, which says when Claude Code read a
// nonzero exit as a success (returnCodeInterpretation, grep's "No
// matches found": then null). A session/load replay has no structured
// result, so every result not flagged as an error gets 0 (0.86.0 to
// 0.101.0: `exitCode = isError ? undefined : 0`). The replay renders the
// result whole, with the terminal content item again, which live frames
// leave out (the adapter's field tracker drops it there as unchanged):
// a 0 beside that item is made up. A nonzero code is the "Exit code N"
// header's, live or replayed: the command's.
func claudeRestatedZero(u *claudeUpdate) bool {
	te := u.Meta.TerminalExit
	return te.ExitCode.Known && te.ExitCode.Value == 0 && u.TerminalContent() != ""
}

// claudeExitTruthful is the first claude-agent-acp build seen to fill
// terminal_exit.exit_code with the command's exit code (or null when it has
// none). claude-code-acp never sends terminal_exit, so the rule costs its
// builds (all numbered below this) nothing.
const claudeExitTruthful = "0.86.0"

func (claude) Info() Info {
	// Signs of an agent that gives no name: claude-code-acp (0.11 to
	// 0.16) offers the auth method claude-login; claude-agent-acp offers
	// none, but every tool call of both carries _meta.claudeCode
	// (matchesShape).
	return Info{
		Name: "claude",
		AgentNames: []string{
			"@agentclientprotocol/claude-agent-acp", "@zed-industries/claude-code-acp",
			"claude-agent-acp", "claude-code-acp", "claude-code", "claude",
		},
		AuthMethodIDs:      []string{"claude-login"},
		ShapeRule:          "an opening tool_call whose _meta has a claudeCode member",
		Summary:            "Claude Code ACP adapters: Bash tool only, Exit code N headers, description content, toolResponse stdout/stderr, persisted-output previews, background notices; terminal_exit set aside where it is made up (builds before 0.86.0, clients that declare JetBrains AIR).",
		ClientCapabilities: richCapabilities,
	}
}

// matchesShape is Claude's ShapeRule, for a session that has not seen its
// agentInfo: claude-agent-acp offers no auth method, but both Claude
// adapters put `_meta.claudeCode` on every tool call they open, and no
// other agent this package knows sends that member.
func (claude) matchesShape(u *shellUpdate, msg []byte) bool {
	return u.SessionUpdate == "tool_call" && metaHas(msg, "CLAUDECODE")
}

type claudeToolResponse struct {
	// Stdout is the whole output (stderr merged into it, or beside a
	// non-empty stderr), read whenever it is there: the elided decode
	// decodes it as it validates it (elide:"decoded").
	Stdout           rawText `json:"stdout" elide:"decoded"`
	Stderr           Str     `json:"stderr"`
	Interrupted      *bool   `json:"interrupted"`
	BackgroundTaskID Str     `json:"backgroundTaskId"`
	TimedOutAfterMs  rawAny  `json:"timedOutAfterMs"`
	// PersistedOutputSize is the size of the whole output when Claude saved
	// it to a file because it was too large; stdout then holds only its
	// beginning.
	PersistedOutputSize Code `json:"persistedOutputSize"`
}

// wantedJSON: the result of the client-terminal MCP tool (mcp__acp__Bash)
// comes as an array of content blocks here, whose text the dialect reads
// from the call's rawOutput; only the Bash tool's object is read.
func (claudeToolResponse) wantedJSON() wantType { return wantAny }

type claudeMeta struct {
	TerminalMeta
	// JetBrains is what only a JetBrains AIR client gets:
	// `commandTitle` is a shell command's description (never the command).
	JetBrains *struct {
		Air *struct {
			CommandTitle Str `json:"commandTitle"`
		} `json:"air"`
	} `json:"jetbrains"`
	ClaudeCode *struct {
		ToolName     Str                 `json:"toolName"`
		ToolResponse *claudeToolResponse `json:"toolResponse"`
		// NonExecutionKind says why a tool did not run or was stopped:
		// "user-rejected" (a cancel), "permission-rule" (a refusal).
		NonExecutionKind Str `json:"nonExecutionKind"`
	} `json:"claudeCode"`
}

type claudeInput struct {
	ShellInput
	RunInBackground *bool `json:"run_in_background"`
}

type claudeUpdate struct {
	ToolCall
	Name      Str             `json:"name"`
	RawInput  claudeInput     `json:"rawInput"`
	RawOutput claudeRawOutput `json:"rawOutput"`
	Meta      *claudeMeta     `json:"_meta"`
}

// claudeRawOutput is rawOutput: a string or an object (ShellOutput), or,
// from the client-terminal Bash (mcp__acp__Bash), an array of MCP content
// items whose texts are its result ("Exited with code N.Final output:
// ...").
type claudeRawOutput struct {
	ShellOutput
	// Items are the texts of the array's "text" items, in order.
	Items []string
}

// maxClaudeItems bounds the text items claudeRawOutput keeps (the tool
// sends one).
const maxClaudeItems = 64

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (r *claudeRawOutput) UnmarshalJSON(b []byte) error {
	*r = claudeRawOutput{}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '[' {
		return r.ShellOutput.UnmarshalJSON(b)
	}
	jsonlit.EachElement(b, func(val []byte) bool {
		var typ, text Str
		jsonlit.EachMember(val, func(key string, v []byte) {
			switch key {
			case "TYPE":
				typ.UnmarshalJSON(v)
			case "TEXT":
				text.UnmarshalJSON(v)
			}
		})
		if typ.S == "text" && text.Set {
			r.Items = append(r.Items, text.S)
		}
		return len(r.Items) < maxClaudeItems
	})
	return nil
}

// unreadFields: through a client terminal (mcp__acp__Bash) claude-code-acp
// 0.11 to 0.16 send their result ("Exited with code N.Final output: ...")
// as MCP text items in rawOutput, and restate it in toolResponse, which is
// not read. The rawOutput items are read, by claudeRawOutput's own decode;
// they are listed here because the known tree comes from the json tags,
// which type only rawOutput's object form (ShellOutput), so that the
// items are not reported as unrecognized.
func (claudeUpdate) unreadFields() []string {
	return []string{"rawOutput[].text", "_meta.claudeCode.toolResponse[].text"}
}

func (c claude) read(msg []byte, scope string) (Frame, error) {
	switch {
	case c.oldWords:
		return readFrame(msg, scope, observeClaudeOldWords, askClaude)
	case c.interruptLine:
		return readFrame(msg, scope, observeClaudeInterruptLine, askClaude)
	case c.exitMadeUp:
		return readFrame(msg, scope, observeClaudeMadeUpExit, askClaude)
	case c.unnamed:
		return readFrame(msg, scope, observeClaudeUnnamed, askClaude)
	}
	return readFrame(msg, scope, observeClaude, askClaude)
}

func observeClaude(u *claudeUpdate) []accum.Observation {
	return observeClaudeBuild(u, claude{})
}

// observeClaudeUnnamed reads a session that names no build
// (claude.unnamed).
func observeClaudeUnnamed(u *claudeUpdate) []accum.Observation {
	return observeClaudeBuild(u, claude{unnamed: true})
}

// observeClaudeMadeUpExit reads a build whose terminal_exit exit code is
// made up (claude.exitMadeUp).
func observeClaudeMadeUpExit(u *claudeUpdate) []accum.Observation {
	return observeClaudeBuild(u, claude{exitMadeUp: true})
}

// observeClaudeInterruptLine reads a build whose Claude Code writes
// claudeInterruptLine (claude.interruptLine), all of them older than
// claudeExitTruthful.
func observeClaudeInterruptLine(u *claudeUpdate) []accum.Observation {
	return observeClaudeBuild(u, claude{exitMadeUp: true, interruptLine: true})
}

// observeClaudeOldWords reads a build whose Claude Code writes none of the
// newer words (claude.oldWords), all of them older than
// claudeExitTruthful.
func observeClaudeOldWords(u *claudeUpdate) []accum.Observation {
	return observeClaudeBuild(u, claude{exitMadeUp: true, oldWords: true})
}

func observeClaudeBuild(u *claudeUpdate, b claude) []accum.Observation {
	exitMadeUp := b.exitMadeUp
	switch u.SessionUpdate {
	case "tool_call", "tool_call_update":
		return []accum.Observation{readClaude(u, b)}
	case "terminal_update", "terminal_output_chunk":
		if claudeTerminalAnnounced(&u.ToolCall) {
			return nil
		}
		if o, ok := readTerminalUpdate(&u.ToolCall); ok {
			if u.SessionUpdate == "terminal_update" {
				if exitMadeUp && o.Exit != nil {
					// The adapter copies its terminal_exit code to
					// exitStatus: made up here as there.
					o.Exit, o.ExitSetAside = nil, true
				}
				if o.Exit != nil && o.Exit.Code == 0 {
					// A session/resume replay's exitStatus is 0 for every
					// result not flagged as an error, a nonzero exit
					// Claude Code read as a success too, and it comes
					// before the tool_call_update that restates the
					// terminal item (claudeRestatedZero cannot see it):
					// a 0 is exit evidence only on a live frame.
					o.ExitLiveOnly = true
				}
				claudeTerminalBytes(&o)
			}
			return []accum.Observation{o}
		}
	}
	return nil
}

// claudeTerminalAnnounced says whether a v2 terminal_update carries
// neither output, nor an exit status, nor a cwd. claude-agent-acp
// (0.101.0, ACP v2; its V2Terminals) sends one with the terminalId alone
// to announce the terminal, before the tool_call_update whose content
// shows it; one with `command` whenever a report's rawInput.command
// changes, right before that report (a session/resume replay: before the
// call shows the terminal); one offering terminal/cancel
// (`capabilities`). Each says nothing the tool call's own frames do not,
// and the first two come before any call owns the terminal: no
// observation. (It never sends a cwd; one would be read.)
func claudeTerminalAnnounced(tc *ToolCall) bool {
	return tc.SessionUpdate == "terminal_update" && !tc.Output.Null && !tc.Output.Data.Set && tc.ExitStatus == nil && tc.Cwd == nil
}

// claudeBase adds to o what updates and permission asks share: the
// command (title rules above), cwd, description and whether the tool is
// Bash.
func claudeBase(u *claudeUpdate, o accum.Observation) accum.Observation {
	tc := u.ToolCall
	if tc.Title != nil {
		t := strings.TrimSpace(*tc.Title)
		if t == "Terminal" || t == "" {
			tc.Title = nil
		} else {
			if len(t) >= 2 && t[0] == '`' && t[len(t)-1] == '`' {
				t = strings.Trim(t, "`")
			}
			tc.Title = &t
		}
	}
	applyShellInput(&o, &tc, &u.RawInput.ShellInput)
	if m := u.Meta; m != nil && m.JetBrains != nil && m.JetBrains.Air != nil && m.JetBrains.Air.CommandTitle.Set {
		// An AIR client's copy of the description, which the adapter adds
		// to Bash and PowerShell only. Its report of a streaming input
		// names the command only in the title (no rawInput, no kind): the
		// title is then the command.
		if o.Description == "" {
			o.Description = m.JetBrains.Air.CommandTitle.S
		}
		if o.Command == "" && tc.Title != nil {
			o.Command, o.Src.Command = *tc.Title, "title (a shell's: _meta.jetbrains.air.commandTitle)"
		}
	}
	if u.RawInput.RunInBackground != nil && *u.RawInput.RunInBackground {
		o.Background = true
	}
	name := claudeToolName(u)
	switch {
	case name == "Bash" || name == claudeClientBash:
		o.Shell = accum.ShellYes
	case name != "":
		o.Shell = accum.ShellNo
	}
	return o
}

// claudeOtherTools are the tools of Claude Code that are no shell but
// that claude-code-acp gives the kind execute: BashOutput and KillShell
// (KillBash before it) read and stop a background shell.
var claudeOtherTools = map[string]bool{"BashOutput": true, "KillShell": true, "KillBash": true}

// knownTool implements knownTools: a tool of Claude Code's the dialect
// knows is no shell, though its kind is execute.
func (u *claudeUpdate) knownTool() bool { return claudeOtherTools[claudeToolName(u)] }

// claudeToolName is the tool the frame names: `_meta.claudeCode.toolName`,
// else the unstable `name` ("" when it names none).
func claudeToolName(u *claudeUpdate) string {
	if u.Meta != nil && u.Meta.ClaudeCode != nil && u.Meta.ClaudeCode.ToolName.S != "" {
		return u.Meta.ClaudeCode.ToolName.S
	}
	return u.Name.S
}

func readClaude(u *claudeUpdate, b claude) accum.Observation {
	o := claudeBase(u, u.Base())
	ended := o.Status.Ended()
	completed := o.Status == accum.StatusCompleted
	exitMadeUp := b.exitMadeUp
	// The frame is the client-terminal Bash's: its header and notices
	// are read (every frame of its result names the tool).
	clientBash := claudeToolName(u) == claudeClientBash
	preSDK := claudePreSDK(u, b, ended, clientBash)
	if preSDK {
		b.oldWords = true
	}

	if m := u.Meta; m != nil {
		// terminal_info and terminal_exit the shared way; the output is
		// Claude's whole output once, read below as a snapshot.
		tm := m.TerminalMeta
		outputs := []*TerminalData{tm.TerminalOutput, tm.TerminalOutputDelta}
		tm.TerminalOutput, tm.TerminalOutputDelta = nil, nil
		if te := tm.TerminalExit; te != nil && (exitMadeUp || claudeRestatedZero(u)) {
			// The terminal ended, but its exit code is the adapter's.
			cp := *te
			// A replay's made-up 0 is not said to be set aside: the call
			// it restates ended live (with this exit unknown, or known and
			// final), and a reason that changed only for the replay would
			// revise an ended call for nothing.
			o.ExitSetAside = cp.ExitCode.Known && exitMadeUp
			cp.ExitCode = Code{}
			tm.TerminalExit = &cp
		}
		tm.ApplyTerminalMeta(&o)
		for _, td := range outputs {
			if td == nil {
				continue
			}
			o.Shell = accum.ShellYes
			if o.TerminalID == "" {
				o.TerminalID = td.TerminalID
			}
			if td.Data.S != "" {
				claudeText(&o, td.Data.S, completed, b, clientBash, textKind(ended))
			}
		}
		if cc := m.ClaudeCode; cc != nil && cc.ToolResponse != nil {
			readToolResponse(&o, cc.ToolResponse)
		}
		if cc := m.ClaudeCode; cc != nil && claudeUserStop[cc.NonExecutionKind.S] {
			o.Cancelled = true
		}
	}

	if completed && !clientBash {
		// Claude Code writes its "Exit code N" header only over a result
		// it flags as an error, which the adapters end `failed`: a header
		// read from an earlier frame without a status (a terminal_output,
		// which a session/load replay sends with no toolResponse before
		// it) was the command's first line.
		o.ExitWordsOutput = true
	}
	switch {
	case u.RawOutput.Text.Set:
		claudeText(&o, u.RawOutput.Text.S, completed, b, clientBash, textKind(ended))
		if ended {
			claudeContentNote(&o, &u.ToolCall)
		}
	case u.RawOutput.Fields != nil:
		applyShellOutput(&o, &u.RawOutput.ShellOutput)
	case clientBash && len(u.RawOutput.Items) > 0:
		// The client-terminal Bash's result: its header (the exit code,
		// the signal, a timeout) before the terminal's output. A session/load
		// replay sends nothing else; live, the client's answers about its
		// terminal beat it (a stronger exit, the output straight from the
		// process).
		claudeText(&o, strings.Join(u.RawOutput.Items, ""), completed, b, clientBash, textKind(ended))
	case ended && o.Shell != accum.ShellNo && o.TerminalID == "" && u.TerminalContent() == "":
		// No rawOutput: the fenced content text of the final frame.
		if text, ok := u.Texts(); ok {
			if t, fenced := StripFence(text); fenced {
				text = t
			}
			if preSDK && !completed {
				text = claudeCodeTimeoutFirst(&o, text)
			}
			claudeText(&o, text, completed, b, clientBash, accum.Final)
		}
	}
	return o
}

// claudeCodeTimeout is the notice Claude Code 1.0 (claude-code-acp
// 0.2.5 to 0.4.5; 0.4.7 sends no result) puts before the stderr of a
// command its timeout killed: "Command timed out after D", D as its
// duration formatter writes it (2s, 1.5s, 2m 5s, 1h 0m 5s), joined to
// the stderr by a space, the stderr before the stdout in the `failed`
// result.
var claudeCodeTimeout = mustAnchored(`^Command timed out after (?:\d+h )?(?:\d+m )?\d+(?:\.\d)?s(?: |\n|$)`)

// claudePreSDK says whether a frame is a final in the shape of
// claude-code-acp before 0.6.9, which names no build and ends
// each Bash call with no `_meta` at all: `completed` or `failed` with the
// output alone as the content text (fenced from 0.4.x, bare in 0.2.5), no
// exit code anywhere. Its Claude Code (1.0.124 in 0.4.5, 1.0.128 in
// 0.2.5) writes none of the newer words (claude.oldWords: its interrupt
// line is "<error>Command was aborted before completion</error>", it
// writes no "Exit code N" header on this wire), and kills a command its
// timeout stops, with claudeCodeTimeout first. Such a final of a session
// that names no build (claude.unnamed) is read so; every build that names
// itself puts `_meta.claudeCode` on its Bash results, but to an AIR
// client, which unnamed leaves out.
func claudePreSDK(u *claudeUpdate, b claude, ended, clientBash bool) bool {
	return b.unnamed && ended && u.Meta == nil && !clientBash
}

// claudeCodeTimeoutFirst reads claudeCodeTimeout at the start of a
// `failed` final's text and returns the text without it: only for a
// final in the shape of the builds that write it (claudePreSDK). The
// builds with `_meta.claudeCode` write an "Exit code N" header over every
// failure, and claudeTimedOut reads their notice under it; 0.6.10 to
// 0.9.0 name their build, and their Claude Code moves such a command to
// the background instead.
func claudeCodeTimeoutFirst(o *accum.Observation, s string) string {
	m := claudeCodeTimeout.FindStringIndex(s)
	if m == nil {
		return s
	}
	o.TimedOut, o.Worded.TimedOut = true, true
	o.Src.Notice = "Claude Code 1.0's timeout notice, the result's first line"
	return s[m[1]:]
}

// claudeContentNote reads the truncation note of the content text when
// the output was taken from another source (rawOutput, toolResponse):
// claude-agent-acp without the capability states the real size only
// there ("[Output truncated (N bytes total): ...]"). The note marks the
// stream truncated with that size, whichever text is its output.
func claudeContentNote(o *accum.Observation, tc *ToolCall) {
	stated := int64(0) // by the chosen text (a preview's rounded size is less)
	for _, t := range o.Texts {
		stated = max(stated, t.TotalBytes)
	}
	text, ok := tc.Texts()
	if !ok {
		return
	}
	if t, fenced := StripFence(text); fenced {
		text = t
	}
	loc := findFrom(claudeTruncTrailer, text, "[Output truncated (")
	if loc == nil {
		return
	}
	if n, err := strconv.ParseInt(text[loc[2]:loc[3]], 10, 64); err == nil && n > stated {
		o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: accum.Delta, Truncated: true, TotalBytes: n})
	}
}

// readToolResponse reads `_meta.claudeCode.toolResponse`.
func readToolResponse(o *accum.Observation, tr *claudeToolResponse) {
	if tr.Interrupted != nil && *tr.Interrupted {
		o.Cancelled = true
	}
	if tr.BackgroundTaskID.S != "" {
		o.Background = true
	} else if tr.TimedOutAfterMs.Present {
		o.TimedOut = true
	}
	if tr.Stdout.lit == nil {
		return
	}
	stdout := tr.Stdout.Str().S
	stderr := tr.Stderr.S
	if i := claudeCwdReset(stderr); i >= 0 {
		stderr = stderr[:i] // Claude Code's notice, not the command's
	}
	if tr.Stderr.Set && stderr != "" {
		o.Texts = append(o.Texts,
			accum.Text{Stream: accum.Stdout, Kind: accum.Final, Text: stdout},
			accum.Text{Stream: accum.Stderr, Kind: accum.Final, Text: stderr})
		return
	}
	// stderr is merged into stdout: stdout is the whole output, often more
	// than the content's <persisted-output> preview or the 30 000-byte
	// cut with its truncation note that follow (a Snapshot; the shorter,
	// truncated restatements never replace it).
	cut := false
	if i := claudeLinesCut(stdout); i >= 0 {
		// The older Bash tool's cut: the first 30,000 characters.
		stdout, cut = stdout[:i], true
	}
	if stdout != "" || cut {
		t := accum.Text{Stream: accum.Combined, Kind: accum.Snapshot, Text: stdout, Truncated: cut, Head: cut}
		if n := tr.PersistedOutputSize; n.Known && int(n.Value) > len(stdout) {
			// Saved to a file: stdout is the beginning of a bigger output.
			t.Truncated, t.Head, t.TotalBytes = true, true, int64(n.Value)
		}
		o.Texts = append(o.Texts, t)
	}
}

// claudeUserStop are the nonExecutionKind values that mean the user
// stopped the call: a cancel while it ran, or a refused permission.
var claudeUserStop = map[string]bool{"user-rejected": true, "permission-rule": true}

// claudeNotice says whether t is one of the adapters' refusal and cancel
// texts, which they send where output goes (terminal_output data,
// rawOutput, content). The whole text must be the notice: output that
// merely quotes one is output. It is what
//
//	(?s)^(?:User refused permission to run tool\.?|The user doesn't want to (?:proceed with|take) this (?:tool use|action)\b.*|\[Request interrupted by user(?: for tool use)?\]|Tool cancelled by user\.?)$
//
// matches (TestClaudeNoticeIsItsPattern): one of a few texts whole, or
// the lead of the rejection, whose rest (the reason, any text) decides
// nothing. As a regexp, `.*$` walked the whole rest of each rejection, a
// few hundred bytes, at a few µs each (1.2% of the server's samples on
// the claude load).
func claudeNotice(t string) bool {
	if claudeNoticeWhole[t] {
		return true
	}
	for _, lead := range claudeNoticeLeads {
		if strings.HasPrefix(t, lead) {
			// \b: the lead ends in a letter, so the text ends there or
			// goes on with a byte that is no ASCII letter, digit or _.
			return len(t) == len(lead) || !isWordByte(t[len(lead)])
		}
	}
	return false
}

// claudeNoticeWhole are the notices that are the whole text, and
// claudeNoticeLeads the leads of the rejection (see claudeNotice).
var (
	claudeNoticeWhole = map[string]bool{
		"User refused permission to run tool": true, "User refused permission to run tool.": true,
		"[Request interrupted by user]": true, "[Request interrupted by user for tool use]": true,
		"Tool cancelled by user": true, "Tool cancelled by user.": true,
	}
	claudeNoticeLeads = []string{
		"The user doesn't want to proceed with this tool use", "The user doesn't want to proceed with this action",
		"The user doesn't want to take this tool use", "The user doesn't want to take this action",
	}
)

// isWordByte says whether c is a word character to the regexp package's
// \b: an ASCII letter, digit or underscore.
func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

// claudeToolCancelled is the cancel notice of claude-code-acp's
// client-terminal Bash (mcp__acp__Bash), its result whatever the status.
const claudeToolCancelled = "Tool cancelled by user"

// claudeNoOutput is the text Claude Code gives the model, and
// claude-agent-acp then sends as rawOutput (0.101.0, without a client
// terminal), for a tool result without output: "(Bash completed with no
// output)". The command printed nothing; the text is no output.
var claudeNoOutput = mustAnchored(`^\([A-Za-z][\w.-]* completed with no output\)$`)

// claudeUnfinished are the texts claude-agent-acp (0.101.0) sends as the
// content of a call it closes because the turn ended without the call's
// result: Claude dropped it before it ran, a session/cancel stopped it
// (a cancel), or Claude ended the turn without a result. None is output.
var claudeUnfinished = mustAnchored(`^(?:Claude stopped this tool call before it ran\.|The turn was cancelled before this tool call returned a result\.|Claude ended the turn without returning a result for this tool\.)$`)

// claudeClientBash is claude-code-acp's Bash when the client offers
// terminals: an MCP tool that runs the command with terminal/create.
const claudeClientBash = "mcp__acp__Bash"

// claudeTermHeader is the header claude-code-acp's mcp__acp__Bash writes
// before the terminal's output in its result: how it ended ("Timed out.",
// "Killed.", "Interrupted by the user." for an exit status with no code),
// the exit code and the signal from the client's exit status, then "Final
// output:" (it exited) or "New output:" (it had not). All of it is a
// notice about the command; the output after it restates the terminal's.
var claudeTermHeader = mustAnchored("^(Interrupted by the user\\. |Killed\\. |Timed out\\. )?(?:Exited with code (-?\\d+)\\.)?(?:Signal `([^`\\n]*)`\\. )?(?:Final|New) output:\\n\\n")

// claudeTermHeaderOf is claudeTermHeader's submatches in s, read only in
// the client-terminal Bash's result (clientBash), else nil.
func claudeTermHeaderOf(clientBash bool, s string) []string {
	if !clientBash {
		return nil
	}
	return claudeTermHeader.FindStringSubmatch(s)
}

// claudeTermTrailer is what it appends when the client cut the output
// (outputByteLimit 32000): the output is the client's tail, truncated.
var claudeTermTrailer = regexp.MustCompile(`\n\nCommand output was too long, so it was truncated to \d+ bytes\.$`)

// claudeTermBackground is its answer for run_in_background.
var claudeTermBackground = mustAnchored(`^Command started in background with id: \S+$`)

// claudeAbortedNotice is the line claude-agent-acp appends to the output
// of a command the user interrupted.
const claudeAbortedNotice = "[Command was aborted before completion]"

var (
	claudeAborted    = regexp.MustCompile(`\n?\[Command was aborted before completion\]\s*$`)
	claudeExitHeader = mustAnchored(`^Exit code (-?\d+)(?:\n|$)`)
	// The adapter's note after the part of a big output it kept, naming
	// the file Claude Code saved the whole to.
	claudeTruncTrailer = regexp.MustCompile(`\n*\[Output truncated \((\d+) bytes total\): full output saved to [^\n]*\]\s*$`)
	// The older Bash tool (claude-code-acp 0.11.0) keeps the first 30,000
	// characters and says after a blank line how many lines it dropped,
	// not how many bytes (see claudeLinesCut).
	claudeLinesTrailer = regexp.MustCompile(`\n\n\.\.\. \[\d+ lines truncated\] \.\.\.\s*$`)
	claudeBgStarted    = mustAnchored(`(?s)^Command running in background with ID: .*$`)
	// Claude Code's notice for a command its timeout moved to the
	// background: one last line that names the task.
	claudeBgMoved  = regexp.MustCompile(`\n?Command did not complete within its [^\n]*? timeout and was moved to the background \(ID: [^\s)]+\)\.[^\n]*\s*$`)
	claudeTimedOut = regexp.MustCompile(`\n?Command timed out after [^\n]*\s*$`)
)

// claudeCwdNotice starts the line Claude Code appends to the stderr of a
// command that left the shell in another directory (`cd /tmp && pwd`):
// "Shell cwd was reset to DIR", DIR being the agent's work directory. It
// is the last line of the stderr (alone, or after a newline: "\nShell
// cwd ..." in claude-agent-acp 0.101.0), so of the merged output too:
// "OUT\n\nShell cwd was reset to DIR" live, "OUT\nShell cwd ..." in a
// session/load replay and in claude-code-acp 0.16.2's result.
const claudeCwdNotice = "Shell cwd was reset to "

// claudeCwdReset returns where the cwd notice (claudeCwdNotice), with the
// blank line before it, starts in s, or -1: only as the whole last line,
// naming an absolute path. Elsewhere the words are output.
func claudeCwdReset(s string) int {
	// Only the last line is looked at: a whole output is not searched.
	i := strings.LastIndexByte(s, '\n') + 1
	line := s[i:]
	if !strings.HasPrefix(line, claudeCwdNotice) || strings.Contains(line[1:], claudeCwdNotice) {
		return -1
	}
	if dir := line[len(claudeCwdNotice):]; !strings.HasPrefix(dir, "/") || strings.IndexByte(dir, '\r') >= 0 {
		return -1
	}
	for n := 0; n < 2 && i > 0 && s[i-1] == '\n'; n++ {
		i--
	}
	return i
}

// claudeCutChars is where Claude Code's Bash tool cuts a long output
// (its maxOutputLength, 30,000 UTF-16 code units by default; recorded:
// claude-code-acp 0.11.0 keeps exactly that much of `seq 1 60000`).
const claudeCutChars = 30000

// claudeLinesCut returns where the older Bash tool's "... [N lines
// truncated] ..." trailer starts in s, or -1. The tool writes it only
// after the first claudeCutChars characters of a longer output: after a
// shorter text the same words are what the command printed (claude-agent-acp
// 0.101.0 sends such output whole, with exit 0).
func claudeLinesCut(s string) int {
	loc := findFrom(claudeLinesTrailer, s, "... [")
	if loc == nil || !claudeCutLong(s[:loc[0]]) {
		return -1
	}
	return loc[0]
}

// claudeCutLong says whether s is at least claudeCutChars UTF-16 code
// units long, as the text a cut kept is.
func claudeCutLong(s string) bool {
	if len(s) < claudeCutChars { // a code unit takes a byte at least
		return false
	}
	n := 0
	for _, r := range s {
		if n++; r > 0xFFFF {
			n++
		}
		if n >= claudeCutChars {
			return true
		}
	}
	return false
}

// claudeText reads one of Claude's output texts: it removes and reads the
// "Exit code N" header (not on a `completed` frame, which is never an
// error), the persisted-output wrapper, truncation trailers and background
// or timeout notices, then adds the rest as Combined output of kind k.
// A build that writes none of the newer words (old: claude.oldWords)
// gets only the ones it writes read (the refusal and cancel notices, the
// lines-truncated trailer, "Command running in background with ID: X",
// the cwd notice): the rest is output. A build whose Claude Code marks an
// interrupted call (b.interruptLine) gets claudeInterruptLine read as
// the cancel where it stands after the header of a final frame.
// The client-terminal Bash's header and notices (claudeTermHeader,
// claudeTermBackground, its cancel under `completed`) are read only when
// clientBash says the frame is that tool's: in the Bash tool's output
// the same words are what the command printed.
//
// The words it removes (the header, the notices) are the command's own
// output when an earlier source gave the stream exactly this text whole
// (toolResponse's stdout, which Claude sends for a success only, before
// the terminal's output): the text says so (accum.Text.Whole), with what
// was read from them (Observation.Worded).
func claudeText(o *accum.Observation, s string, completed bool, b claude, clientBash bool, k accum.TextKind) {
	old := b.oldWords
	whole := s
	t := strings.TrimSpace(s)
	// Claude Code refuses and cancels under `failed`, never `completed`:
	// on a completed frame those words are the command's output. The
	// client-terminal Bash's own "Tool cancelled by user" is its result.
	if (!completed || clientBash && strings.HasPrefix(t, claudeToolCancelled)) && claudeNotice(t) {
		o.Cancelled, o.CancelNotice = true, notice(t)
		o.Worded.Cancelled = true
		// On a frame that does not end the call (the terminal's output
		// with _meta.terminal_output) the adapter sends its notice as it
		// sends a command's output, and then ends the call `failed`; a
		// command that printed the same words ends `completed`. Without
		// toolResponse's copy of the output before it (an AIR client gets
		// none) only that final tells them apart.
		o.WordsIfFailed = k != accum.Final
		o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: k, Whole: whole})
		return
	}
	words := accum.Text{Stream: accum.Combined, Kind: k, Whole: whole} // words alone, unless held whole
	if !old && claudeNoOutput.MatchString(t) {
		// The command printed nothing; Claude Code says so in words.
		o.Src.Notice = "Claude Code's empty-result notice"
		o.Texts = append(o.Texts, words)
		return
	}
	if !old && claudeUnfinished.MatchString(t) {
		// The adapter closed a call that got no result: no output.
		o.Src.Notice = "the adapter's notice of a call without a result"
		if strings.HasPrefix(t, "The turn was cancelled") {
			o.Cancelled, o.CancelNotice = true, notice(t)
			o.Worded.Cancelled = true
		}
		o.Texts = append(o.Texts, words)
		return
	}
	truncated := false
	var total int64
	if m := claudeTermHeaderOf(clientBash, s); m != nil {
		switch m[1] {
		case "Timed out. ":
			o.TimedOut, o.Worded.TimedOut = true, true
		}
		if c := CodeFromString(m[2]); m[2] != "" && c.Known {
			o.Exit = accum.StrongerExit(o.Exit, &accum.Exit{Code: c.Value, Source: accum.ExitText})
			o.Worded.Exit = true
		}
		if m[3] != "" {
			o.Signal, o.Worded.Signal = NormalizeSignal(m[3]), true
		}
		s = s[len(m[0]):]
		if loc := claudeTermTrailer.FindStringIndex(s); loc != nil {
			s, truncated, whole = s[:loc[0]], true, ""
		}
		// The client's tail of the output, not its head (a header alone
		// is words, kept for wordsAsOutput; whole is the matched text, so
		// never empty, unless a trailer cut it).
		o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: k, Text: s, Truncated: truncated, Whole: whole})
		return
	}
	if clientBash && claudeTermBackground.MatchString(strings.TrimSpace(s)) {
		o.Background = true
		return
	}
	worded := false // s is whole but for words about the command
	if loc := findFrom(claudeAborted, s, claudeAbortedNotice); loc != nil && !old {
		// claude-agent-acp's line after the output of a command the user
		// interrupted (toolResponse interrupted: true).
		o.Cancelled, o.CancelNotice = true, claudeAbortedNotice
		o.Worded.Cancelled, worded = true, true
		s = s[:loc[0]]
	}
	cwdAt := -1 // where the cwd notice starts, when nothing after it was removed
	if i := claudeCwdReset(s); i >= 0 {
		if len(s) == len(whole) {
			cwdAt = i
		}
		s, worded = s[:i], true
	}
	header := false // the text is an error's, under its Exit code header
	if !completed && !old {
		if m := claudeExitHeader.FindStringSubmatch(s); m != nil && claudeHeaderAgrees(o, m[1]) {
			header = true
			if c := CodeFromString(m[1]); c.Known {
				o.Exit = accum.StrongerExit(o.Exit, &accum.Exit{Code: c.Value, Source: accum.ExitText})
				if o.Exit.Source == accum.ExitText {
					o.Src.Exit = "Exit code header of the output text"
				}
				o.Worded.Exit = true
			}
			s, worded = s[len(m[0]):], true
			o.Src.Notice = "Exit code header of the output text"
			if rest, ok := strings.CutPrefix(s, claudeInterruptLine); ok && b.interruptLine && k == accum.Final && (rest == "" || rest[0] == '\n') {
				// Claude Code's mark of the user's interrupt, under the
				// header of the call's `failed` final: a cancel that
				// keeps the header's exit code; the output follows it.
				o.Cancelled, o.CancelNotice = true, claudeInterruptLine
				o.Worded.Cancelled = true
				s = strings.TrimPrefix(rest, "\n")
			}
			if cwdAt >= 0 {
				// The notice is read as Claude Code's whether or not the
				// header is (toolResponse's stdout holds no stderr, a
				// replay and an AIR client get none): the whole the
				// header may prove part of (Text.Whole) is the header and
				// the rest, and the header alone is the words a
				// `completed` final puts back
				// (Observation.ExitWordsOutput). The cost: a command that
				// prints both a first line like the header and a last
				// line like the notice loses that last line.
				whole = whole[:cwdAt]
			}
		}
	}
	if p, size, ok := persistedPreview(s); ok && !old {
		s, truncated, worded = p, true, false
		if size > int64(len(p)) {
			total = size // at least: the stated size is rounded
		}
	}
	if loc := findFrom(claudeTruncTrailer, s, "[Output truncated ("); loc != nil && !old {
		// The note states the real size of the whole output.
		if n, err := strconv.ParseInt(s[loc[2]:loc[3]], 10, 64); err == nil {
			total = n
		}
		s, truncated, worded = s[:loc[0]], true, false
	}
	if i := claudeLinesCut(s); i >= 0 {
		s, truncated, worded = s[:i], true, false
	}
	if claudeBgStarted.MatchString(s) {
		o.Background, o.Worded.Background = true, true
		s, worded = "", !truncated
	}
	if loc := findFrom(claudeBgMoved, s, "Command did not complete within its "); loc != nil && !old {
		o.Background, o.Worded.Background = true, true
		s, worded = s[:loc[0]], !truncated
	}
	if loc := findFrom(claudeTimedOut, s, "Command timed out after "); loc != nil && header {
		// Claude Code kills such a command, and reports it as an error
		// (Exit code 143): without the header the line is output.
		o.TimedOut, o.Worded.TimedOut = true, true
		s, worded = s[:loc[0]], !truncated
	}
	if !worded {
		whole = ""
	}
	if s == "" && !truncated && whole == "" {
		return
	}
	// A preview or a cut output is the beginning of the whole (Head).
	o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: k, Text: s, Truncated: truncated, Head: truncated, TotalBytes: total, Whole: whole})
}

// claudeHeaderAgrees says whether an "Exit code N" header's N agrees with
// the terminal_exit of the same frame, if any: Claude writes the header
// only over the text of a command that failed with N, and
// claude-agent-acp (from claudeExitTruthful) sends that N as terminal_exit.
// Under another code (a made-up one is set aside before) the line is the
// command's own output.
func claudeHeaderAgrees(o *accum.Observation, n string) bool {
	if o.Exit == nil || o.Exit.Source != accum.ExitTerminal {
		return true
	}
	c := CodeFromString(n)
	return c.Known && c.Value == o.Exit.Code
}

// persistedPreview returns the preview inside a <persisted-output> block,
// and the least size of the whole output its "Output too large (148KB)"
// allows (0 when it states none).
func persistedPreview(s string) (string, int64, bool) {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "<persisted-output>") {
		return "", 0, false
	}
	t = strings.TrimPrefix(t, "<persisted-output>")
	t = strings.TrimSuffix(t, "</persisted-output>")
	size := persistedSize(t)
	i := strings.Index(t, "Preview (")
	if i < 0 {
		return "", size, true
	}
	j := strings.Index(t[i:], "):\n")
	if j < 0 {
		return "", size, true
	}
	p := t[i+j+3:]
	p = strings.TrimSuffix(p, "\n")
	p = strings.TrimSuffix(p, "...")
	return p, size, true
}

// claudePersistedSize is the size Claude Code states for an output it
// saved to a file, in its formatFileSize: bytes, or KB and MB of 1024
// with one decimal at most ("148KB" for 151507 bytes, "365.1KB").
var claudePersistedSize = mustAnchored(`^\s*Output too large \((\d+(?:\.\d+)?) ?(bytes|B|KB|MB|GB)\)`)

// persistedSize returns the least size the stated one allows: a size
// rounded to a tenth of its unit is at least that tenth's half below it.
// 0 when t states none.
func persistedSize(t string) int64 {
	m := claudePersistedSize.FindStringSubmatch(t)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0
	}
	half := 0.0 // a size in bytes is exact
	if m[2] != "bytes" && m[2] != "B" {
		// formatFileSize rounds to one decimal and drops a ".0".
		half = 0.05
	}
	return leastBytes(v, half, m[2])
}

// claudeTerminalBytes reads a v2 terminal_update's output snapshot, which
// is v1's `_meta.terminal_output.data` base64-encoded (the adapter's
// V2Terminals): the same text, with the same header, notices and
// trailers, read by claudeText as v1's is (the frame carries no status:
// v1's output frame carries none either). The text stays bytes, as the
// generic reading gives them. Bytes that are not UTF-8 (which the adapter,
// encoding a string, never sends) lose only their header.
func claudeTerminalBytes(o *accum.Observation) {
	var texts []accum.Text
	for _, t := range o.Texts {
		if t.Kind != accum.Snapshot || len(t.Bytes) == 0 || !utf8.Valid(t.Bytes) {
			texts = append(texts, t)
			continue
		}
		r := accum.Observation{Exit: o.Exit}
		claudeText(&r, string(t.Bytes), false, claude{}, false, accum.Snapshot)
		for _, rt := range r.Texts {
			if (rt.Text != "" || rt.Truncated || rt.TotalBytes > 0) && rt.Whole == "" {
				// Output: bytes again.
				rt.Bytes, rt.Text = []byte(rt.Text), ""
			}
			// A text with words removed stays text, with its Whole
			// (which applies to text only): a `completed` final puts an
			// "Exit code N" first line back (ExitWordsOutput), and a
			// replay's copy of an output the call holds whole is output.
			texts = append(texts, rt)
		}
		o.Exit = r.Exit
		o.Cancelled, o.CancelNotice = o.Cancelled || r.Cancelled, cmp.Or(o.CancelNotice, r.CancelNotice)
		o.Background = o.Background || r.Background
		o.TimedOut = o.TimedOut || r.TimedOut
		o.Worded = r.Worded
		// A refusal or cancel notice, the whole output: as on v1, only
		// the call's final says whose words they are. Its text (Whole)
		// stays a string: the bytes were valid UTF-8.
		o.WordsIfFailed = o.WordsIfFailed || r.WordsIfFailed
		if r.Src.Exit != "" {
			o.Src.Exit = r.Src.Exit
		}
		if r.Src.Notice != "" {
			o.Src.Notice = r.Src.Notice
		}
	}
	o.Texts = texts
	stripClaudeHeaderBytes(o)
}

// stripClaudeHeaderBytes removes an "Exit code N" header from v2 snapshot
// bytes that are not UTF-8 and reads it as text exit evidence.
func stripClaudeHeaderBytes(o *accum.Observation) {
	for i := range o.Texts {
		t := &o.Texts[i]
		if t.Kind != accum.Snapshot || t.Bytes == nil || utf8.Valid(t.Bytes) {
			continue
		}
		if m := claudeExitHeader.FindSubmatch(t.Bytes); m != nil {
			if c := CodeFromString(string(m[1])); c.Known {
				o.Exit = accum.StrongerExit(o.Exit, &accum.Exit{Code: c.Value, Source: accum.ExitText})
			}
			t.Bytes = t.Bytes[len(m[0]):]
		}
	}
}

func askClaude(tc *claudeUpdate) accum.Observation {
	o := claudeBase(tc, tc.askBase())
	o.ApprovalReason = tc.askReason()
	return o
}

// endsWordedFailed: Claude Code writes its "Exit code N" header and its
// notices only over a result the adapters end `failed` (see
// endsWordedFailed).
func (*claudeUpdate) endsWordedFailed() {}
