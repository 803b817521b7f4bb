package dialect

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/acpnorm/acpnorm/internal/accum"
)

// dockerAgent reads docker-agent (Docker's agent runtime, formerly
// cagent; `docker agent` / `cagent` with the `acp` command), tool `shell`.
// Its `agentInfo.name` is "docker agent" (older builds: "cagent").
//
// What it sends (from the field guide and its sources), and what it means
// here:
//   - The permission ask comes BEFORE the `tool_call`, under the same id
//     (the session opens the call from the ask). Both are titled "Shell"
//     (the tool's title, never the command), kind `execute`, status
//     `pending`, `rawInput {cmd, cwd?, timeout? (s), description?}`. The
//     command is `rawInput.cmd` (the tool also accepts `command` for it);
//     the cwd is `rawInput.cwd` ("." or relative: the session resolves it
//     against its cwd).
//   - No live output. One final update, `completed` for every outcome
//     (newer builds: `failed` for a tool error), whose content text and
//     `rawOutput.content` are the tool's result text, stdout and stderr
//     merged and trimmed of surrounding white space:
//   - exit 0: the output itself (`<no output>` when there was none). The
//     tool adds no prefix only when the command exited 0, which is read as
//     a documented proof of success (Succeeded); no exit code is stated.
//     A text that reads like a report none of the below matches (another
//     build's words: see dockerReportSign) is no such proof: the exit is
//     unknown and the text kept as output.
//   - `Error executing command: exit status N\nOutput: <output>`: exit N,
//     and only what follows `Output:` is output.
//   - `Error executing command: signal: killed\nOutput: ...`: the
//     command was killed by a signal (Go's names: killed → SIGKILL,
//     terminated → SIGTERM, ...), exit unknown.
//   - `Command timed out after 2s\nOutput: ...`: the tool killed it at its
//     timeout: TimedOut.
//   - `Command cancelled`: the user's cancel stopped it: Cancelled, no
//     output; so are "The user rejected the tool call." (a rejected ask,
//     maybe with " Reason: ..."), "The tool call was canceled by the user."
//     and "Tool call interrupted before a result was available ...".
//   - "Error starting command: ..." and other "Error: ..." texts of the
//     tool: Failed, not output.
//   - a trailing "\n\n[Output truncated: exceeded 30,000 character
//     limit]": the output is only its head (Truncated, a Head).
//   - The `run_background_job` tool ("Background Job") starts a command in
//     the background and answers "Background job started with ID: ...":
//     Background, no output, exit unknown. Its other tools (list, view,
//     stop background jobs) are not shell commands.
type dockerAgent struct{}

func init() { register(dockerAgent{}) }

func (dockerAgent) Info() Info {
	return Info{
		Name:               "docker-agent",
		AgentNames:         []string{"docker agent", "docker-agent", "cagent"},
		ShapeRule:          `an opening tool_call of kind execute titled exactly "Shell" whose rawInput holds the command under "cmd" (no "command"), with no terminal content or _meta`,
		Summary:            "docker-agent (ex-cagent) shell tool: title \"Shell\", command from rawInput.cmd, one final result text: Error executing command: exit status N / signal: X, Command timed out after D, Output: section as the output.",
		ClientCapabilities: richCapabilities,
	}
}

// dockerShellTitle and dockerBackgroundTitle are the titles of the shell
// tools; neither is a command.
const (
	dockerShellTitle      = "Shell"
	dockerBackgroundTitle = "Background Job"
)

// dockerInput is the shell tools' `rawInput`.
type dockerInput struct {
	Cmd         CommandLine `json:"cmd"`
	Command     CommandLine `json:"command"`
	Cwd         Str         `json:"cwd"`
	Description Str         `json:"description"`
}

// dockerOutput is the final `rawOutput`: {"content": <result text>}.
type dockerOutput struct {
	Content Str `json:"content"`
}

// dockerCall is a tool call frame of docker-agent.
type dockerCall struct {
	ToolCall
	RawInput  *dockerInput  `json:"rawInput"`
	RawOutput *dockerOutput `json:"rawOutput"`
}

// knownTool implements knownTools: docker-agent gives the kind execute to
// the permission ask of every tool that is not read-only, to its
// max-iterations ask ("Maximum iterations (N) reached") and to the
// tool_call of every tool named shell, run_* or exec_* (an MCP run_tests),
// so the kind says nothing of a shell there. A frame titled with another
// tool's name than its shell tools', with no command in its rawInput, is
// a tool the dialect knows is no shell (dockerInputs reads it so).
func (u *dockerCall) knownTool() bool {
	if u.Title == nil {
		return false
	}
	t := strings.TrimSpace(*u.Title)
	in := u.RawInput
	return t != dockerShellTitle && t != dockerBackgroundTitle && (in == nil || (in.Cmd.Line == "" && in.Command.Line == ""))
}

func (dockerAgent) read(msg []byte, scope string) (Frame, error) {
	return readFrame(msg, scope, observeDocker, askDocker)
}

func observeDocker(u *dockerCall) []accum.Observation {
	if u.SessionUpdate != "tool_call" && u.SessionUpdate != "tool_call_update" {
		return nil
	}
	o := u.Base()
	dockerInputs(&o, u)
	if o.Shell == accum.ShellNo || !o.Status.Ended() {
		// No live output; the content of earlier frames is not output.
		return []accum.Observation{o}
	}
	text, ok, src := "", false, "rawOutput.content"
	if out := u.RawOutput; out != nil && out.Content.Set {
		text, ok = out.Content.S, true
	} else {
		text, ok = u.Texts()
		src = "content text"
	}
	if ok {
		switch dockerResult(&o, text) {
		case dockerJSONReport:
			addUnrecognized(&o.Unrecognized, accum.UnrecognizedResult, src)
		case dockerResultBlock:
			// The frame's walk says a result block of a content text;
			// one in rawOutput.content is said here, unless a content
			// text holds the same text.
			if ct, has := u.Texts(); src == "rawOutput.content" && (!has || ct != text) {
				addUnrecognized(&o.Unrecognized, accum.UnrecognizedResult, src)
			}
		}
	}
	return []accum.Observation{o}
}

func askDocker(u *dockerCall) accum.Observation {
	o := u.askBase()
	dockerInputs(&o, u)
	o.ApprovalReason = u.askReason()
	return o
}

// dockerInputs reads shell-ness, command, cwd and description. A frame
// with a title is a shell call only under a shell tool's title or with a
// `cmd`; a kind of execute alone (docker-agent gives it to every `run_*`
// and `exec_*` tool) does not make one.
func dockerInputs(o *accum.Observation, u *dockerCall) {
	in := u.RawInput
	hasCmd := in != nil && (in.Cmd.Line != "" || in.Command.Line != "")
	if u.Title != nil {
		switch t := strings.TrimSpace(*u.Title); {
		case t == dockerBackgroundTitle:
			o.Shell, o.Background = accum.ShellYes, true
		case t == dockerShellTitle || hasCmd && (u.Kind == nil || *u.Kind == "execute"):
			o.Shell = accum.ShellYes
		default:
			o.Shell = accum.ShellNo
		}
	} else if o.Shell == accum.ShellYes && !hasCmd && u.TerminalContent() == "" {
		o.Shell = accum.ShellUnknown // a kind without a title names no tool
	}
	if in == nil {
		return
	}
	switch {
	case strings.TrimSpace(in.Cmd.Line) != "":
		o.Command = in.Cmd.Line
	case in.Command.Line != "":
		o.Command = in.Command.Line
	}
	if in.Cwd.Set && in.Cwd.S != "" {
		o.Cwd = in.Cwd.S
	}
	if in.Description.Set {
		o.Description = in.Description.S
	}
}

var (
	// dockerExecError and dockerTimedOut are the tool's reports; what
	// follows their "Output:" line is the output.
	dockerExecError = regexp.MustCompile(`(?s)^Error executing command: ([^\n]*)\nOutput:(?: |$)(.*)$`)
	dockerTimedOut  = regexp.MustCompile(`(?s)^Command timed out after ([^\n]*)\nOutput:(?: |$)(.*)$`)
	// dockerExecLoose and dockerTimedOutLoose are the same reports with
	// the "Output:" line missing, or not where the tool writes it (another
	// build's): a text that is exactly a line saying an exit status, a
	// signal or a timeout is a report all the same, never output nor a
	// success, and so is such a line with an "Output:" line below it,
	// after which is the output. Output that only starts with the
	// report's words ("Command timed out after 2s (retrying)"), or whose
	// next line is no "Output:" (a program's own log line), stays output.
	dockerExecLoose     = regexp.MustCompile(`(?s)^Error executing command: (exit status -?\d+|signal: [^\n(]+(?: \(core dumped\))?)(?:\n+Output: ?(.*))?$`)
	dockerTimedOutLoose = regexp.MustCompile(`(?s)^Command timed out after ((?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+)(?:\n+Output: ?(.*))?$`)
	dockerExitText      = regexp.MustCompile(`^exit status (-?\d+)$`)
	dockerSignal        = regexp.MustCompile(`^signal: ([^(]+?)(?: \(core dumped\))?$`)
	dockerTruncated     = regexp.MustCompile(`(?:\n\n)?\[Output truncated: exceeded [^\]\n]*\]\s*$`)
	// dockerStopped are the texts that say the user stopped the call:
	// a cancel, a rejected ask, an interrupted turn.
	dockerStopped = regexp.MustCompile(`(?s)^(?:Command cancelled|The user rejected the tool call\..*|The tool call was cancell?ed by the user\.?|Tool call interrupted before a result was available\b.*)$`)
	// dockerToolError are the tool's own errors: nothing ran.
	dockerToolError = regexp.MustCompile(`^(?:Error starting (?:background )?command: |Error creating process group: |Error: missing or empty "cmd" parameter)`)
)

// dockerSignals maps Go's signal descriptions (as os.ProcessState writes
// "signal: killed") to names.
var dockerSignals = map[string]string{
	"hangup": "SIGHUP", "interrupt": "SIGINT", "quit": "SIGQUIT", "illegal instruction": "SIGILL",
	"trace/breakpoint trap": "SIGTRAP", "aborted": "SIGABRT", "bus error": "SIGBUS",
	"floating point exception": "SIGFPE", "killed": "SIGKILL", "user defined signal 1": "SIGUSR1",
	"segmentation fault": "SIGSEGV", "user defined signal 2": "SIGUSR2", "broken pipe": "SIGPIPE",
	"alarm clock": "SIGALRM", "terminated": "SIGTERM",
}

// dockerResult reads the tool's result text of a final frame. It returns
// the sign of a report it does not read (dockerReportSign), "" for none.
func dockerResult(o *accum.Observation, text string) (unread string) {
	t := trimBlank(text)
	switch {
	case dockerStopped.MatchString(t):
		o.Cancelled, o.CancelNotice = true, notice(t)
		return
	case strings.HasPrefix(t, "Background job started with ID: "):
		o.Background = true
		return
	case dockerToolError.MatchString(t):
		o.Failed = true
		return
	}
	body := t
	if m := firstMatch(t, dockerTimedOut, dockerTimedOutLoose); m != nil {
		o.TimedOut = true
		body = m[2]
	} else if m := firstMatch(t, dockerExecError, dockerExecLoose); m != nil {
		body = m[2]
		why := trimBlank(m[1])
		if e := dockerExitText.FindStringSubmatch(why); e != nil {
			if c := CodeFromString(e[1]); c.Known {
				o.Exit = c.Exit(accum.ExitText, true)
			}
		} else if s := dockerSignal.FindStringSubmatch(why); s != nil {
			if name, ok := dockerSignals[strings.TrimSpace(s[1])]; ok {
				o.Signal = name
			} else if sig := grokSignal(strings.TrimSpace(s[1])); sig != "" {
				o.Signal = sig // "signal 35"
			} else {
				o.Verdict = accum.VerdictFailed
			}
		} else {
			o.Failed = true
		}
	} else if o.Status == accum.StatusFailed {
		// A tool error this dialect does not know: the text is the
		// agent's, not output.
		o.Failed = true
		return
	} else if sign := dockerReportSign(t); sign != "" {
		// A report this dialect does not read (another build's words):
		// no proof of exit 0, and it may as well be output. The exit is
		// unknown and the text is kept as sent; an exit line at its head
		// is said by the session's check of the call's text when it ends,
		// a result block in a content text by the frame's walk, one in
		// rawOutput.content (a string the walk leaves to the dialect) and
		// a JSON result by observeDocker.
		unread = sign
	} else {
		// The output alone: the tool wrote no report, so the command
		// exited 0.
		o.Succeeded = true
	}
	truncated := false
	if loc := findFrom(dockerTruncated, body, "[Output truncated: "); loc != nil {
		body, truncated = body[:loc[0]], true
	}
	if body == "<no output>" {
		body = ""
	}
	if body == "" && !truncated {
		return
	}
	o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: accum.Final, Text: body, Truncated: truncated, Head: truncated})
	return
}

// The signs of a report dockerReportSign finds.
const (
	dockerExitLine    = "exit line"
	dockerResultBlock = "result block"
	dockerJSONReport  = "JSON result"
)

// dockerReportSign says why a result text that none of the tool's known
// reports matches still reads like a report rather than like the output
// of an exit 0 (which the tool sends alone): its first line is an exit
// line ("Command failed with exit code 3", "Error running command: exit
// status 3": accum.ExitLineIn), it holds a result block's line near an
// end (resultBlock: "Exit Code: 3", "Process exited with code 3"), or it
// is a JSON object with a member that names an exit and holds a number
// (resultLike: {"exit_code":3,"output":...}). "" when it has none of
// them. A line below the first that only mentions an exit is output.
func dockerReportSign(t string) string {
	first, _, _ := strings.Cut(t, "\n")
	if accum.ExitLineIn([]byte(first), true, nil) {
		return dockerExitLine
	}
	if resultBlock(dockerLiteral(t)) {
		return dockerResultBlock
	}
	if strings.HasPrefix(t, "{") && json.Valid([]byte(t)) {
		found := false
		membersAt([]byte(t), 0, func(key, b []byte, i int) int {
			e := skipMember(b, i)
			found = found || resultLike(key, b[i:e]) == accum.UnrecognizedExit
			return e
		})
		if found {
			return dockerJSONReport
		}
	}
	return ""
}

// dockerLiteral is s as a JSON string literal, unescaped HTML, as an agent's
// JSON writer sends it (what resultBlock reads).
func dockerLiteral(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(s) != nil {
		return nil
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// firstMatch is the submatches of the first of res that matches s, or nil.
func firstMatch(s string, res ...*regexp.Regexp) []string {
	for _, re := range res {
		if m := re.FindStringSubmatch(s); m != nil {
			return m
		}
	}
	return nil
}

// matchesShape is docker-agent's ShapeRule, for a session that has not
// seen its agentInfo: no other agent this package knows titles a shell
// call "Shell" and passes the command as `cmd` (Qwen Code's "Shell" call
// opens with an empty rawInput and a `_meta`).
func (dockerAgent) matchesShape(u *shellUpdate, _ []byte) bool {
	return u.SessionUpdate == "tool_call" && u.Kind != nil && *u.Kind == "execute" &&
		u.Title != nil && *u.Title == dockerShellTitle && u.Meta == nil && u.TerminalContent() == "" &&
		strings.TrimSpace(u.RawInput.Cmd.Line) != "" && u.RawInput.Command.Line == ""
}
