package dialect

import (
	"regexp"
	"strings"

	"github.com/acpnorm/acpnorm/internal/accum"
)

// gemini reads `gemini --acp` (Gemini CLI), tool `run_shell_command`.
//
// What it sends, and what it means here:
//   - `tool_call` (`in_progress`, kind `execute`): title = the command
//     (0.36 replays a call on session/load titled "Shell", the tool's
//     name, which is no command);
//     content = a banner "[current working directory /x] (description)"
//     (or "[in dir]", and " [background]" when the command is started in
//     the background): cwd, description and Background, NOT output. Older
//     releases put the banner in the title after the command; it is split
//     off the same way. No rawInput, no rawOutput.
//   - When approval is needed no `tool_call` is sent: the permission ask is
//     the first sight of the call. Permission() therefore reads the ask as a
//     full observation (shell, command, cwd, description, background); text
//     other than the banner is the reason for asking.
//   - No live output. Text on a running frame that is not a banner is read
//     as the whole output so far (a Snapshot), should a release stream it.
//   - Final `completed` for every exit. Content = the combined output. Only
//     when the output is empty does the text instead say
//     `Command exited with code: N` (ExitText N), `Command terminated by
//     signal: SIGX` (Signal), `Command cancelled by user.` (Cancelled; a
//     notice, but the lines after its `Output before cancellation:` are
//     the real output printed before the cancel; Gemini's only after the
//     client's session/cancel, and only in that shape, see
//     geminiCancelIfAsked),
//     `Command failed: E` (Failed) or `Command moved to background (PID: N)
//     ...` (Background); none of these is output. From 0.40.0 Gemini
//     refuses to run a command holding command substitution and sends,
//     `completed`, only `Blocked: command substitution detected in shell
//     command.` (Failed, quoted as a notice; in --debug too): the command
//     never ran.
//   - Debug mode (--debug): `Command: ...\nDirectory: ...\nOutput:
//     ...\nError: ...\nExit Code: N\nSignal: ...\n...`; 0.45 (recorded)
//     writes only the fields that have a value: `Output: ...\nProcess
//     Group PGID: N` for a success (no exit code line: the exit stays
//     UNKNOWN), `Exit Code` only when nonzero, `Signal` only for a signal.
//     A cancel is `Command was cancelled by user before it could
//     complete. Below is the output before it was cancelled:\n<output>`,
//     and Gemini's inactivity timeout `Command was automatically cancelled
//     because it exceeded the timeout ...` (TimedOut), its output after
//     the marker. `Output` is the combined output
//     (older releases: `Stdout` and `Stderr`, really separated streams),
//     `(empty)` meaning none; `Exit Code` is ExitText, except a 0 beside a
//     signal (a killed process has no exit status); `Signal` a signal
//     (`0`, as Qwen Code 0.15 writes it for none, is none);
//     `Error` is Gemini's own error (spawn/exec failure), not stderr, so it
//     is not output and marks the call Failed.
//   - Gemini sends no exit code for an ordinary completed command, and this
//     build (0.61.0) even completes with empty content for commands that
//     printed output or exited nonzero. Neither output nor empty content
//     proves success, so such a call ends with exit UNKNOWN: no success
//     proof is claimed.
//   - `failed` only when the process could not be spawned (Failed; its text
//     is Gemini's error, not output), or when the user cancelled the call
//     (Cancelled).
type gemini struct {
	// noStarted: the build never writes "Background process started with
	// PID N." (before 0.38.0), so a final of only those words is output.
	noStarted bool
	// noBlock: the build never refuses command substitution (before
	// 0.40.0), so a final of only geminiBlocked is output.
	noBlock bool
	// noCancelShown: the build displays a command the client's cancel
	// stopped after it printed something as that output alone, with no
	// cancel notice (before 0.33.0), so a live final of output is the
	// stopped command's if the user cancelled the turn.
	noCancelShown bool
	// loose: the exit and signal markers and the timeout notice are read
	// in their other spellings too (no colon, a closing period,
	// "canceled"), as Qwen Code, which reads its finals with
	// geminiFinal, may write them. Gemini's own shell tool writes only
	// the *Exact ones.
	loose bool
}

func init() { register(gemini{}) }

// forVersion implements versioned. The notices Gemini writes in place of
// an output came in with its releases, and 0.36.0 shows a command's output
// itself as the final's text, on the same `completed` frame: only the
// build tells a later build's notice from a line the command printed.
// The bundles of 0.36.0 and 0.37.2 hold no "Background process started"
// (0.38.0 on do), those of 0.36.0 to 0.39.1 no "Blocked: command
// substitution" (0.40.0 on do). The display of a command stopped by a
// cancel says so, for any output, from 0.33.0 (the bundles of 0.32.1 and
// before write the notice only for an empty output): the same `completed`
// frame of output is a stopped command on 0.32.1 and one that ended by
// itself on 0.33.0 on. Builds before 0.32.0 send no agentInfo, so they
// read as unknown. An unknown build reads with the newest rules.
func (gemini) forVersion(v Version) Dialect {
	return gemini{noStarted: v.Before(geminiStartedFrom), noBlock: v.Before(geminiBlockFrom),
		noCancelShown: v.Before(geminiCancelShownFrom)}
}

const (
	// geminiStartedFrom is the first release whose bundle writes
	// "Background process started with PID N." (0.37.2 has none).
	geminiStartedFrom = "0.38.0"
	// geminiStartedPrefix opens geminiBackground's second shape, which
	// builds before geminiStartedFrom never write.
	geminiStartedPrefix = "Background process started with PID "
	// geminiBlockFrom is the first release that refuses command
	// substitution (0.39.1 has no such check).
	geminiBlockFrom = "0.40.0"
	// geminiCancelShownFrom is the first release whose display of a
	// command stopped by a cancel holds the notice before its output
	// ("Output before cancellation:"; 0.32.1 shows the output alone).
	geminiCancelShownFrom = "0.33.0"
)

func (gemini) Info() Info {
	// Auth method signs: oauth-personal and gemini-api-key (beside
	// vertex-ai and gateway, which any agent may offer).
	return Info{
		Name:               "gemini",
		AgentNames:         []string{"gemini-cli", "gemini"},
		AuthMethodIDs:      []string{"oauth-personal", "gemini-api-key"},
		Summary:            "Gemini CLI run_shell_command: cwd/description banner, asks as first sight, final text with exit/signal markers or debug Output/Exit Code fields; no exit code means unknown.",
		ClientCapabilities: richCapabilities,
	}
}

// geminiCall is a tool call frame of Gemini CLI; it sends no rawInput or
// rawOutput, so only the shared ACP shape is read.
type geminiCall struct {
	ToolCall
}

func (g gemini) read(msg []byte, scope string) (Frame, error) {
	switch {
	case g.noCancelShown:
		return readFrame(msg, scope, observeGeminiBefore033, askGemini)
	case g.noStarted:
		return readFrame(msg, scope, observeGeminiBefore038, askGemini)
	case g.noBlock:
		return readFrame(msg, scope, observeGeminiBefore040, askGemini)
	}
	return readFrame(msg, scope, observeGemini, askGemini)
}

func observeGemini(u *geminiCall) []accum.Observation { return observeGeminiBuild(u, gemini{}) }

// observeGeminiBefore033 reads a build before 0.33.0 (no cancel notice
// beside output, nor the notices of observeGeminiBefore038).
func observeGeminiBefore033(u *geminiCall) []accum.Observation {
	return observeGeminiBuild(u, gemini{noStarted: true, noBlock: true, noCancelShown: true})
}

// observeGeminiBefore038 reads a build before 0.38.0 (no "Background
// process started", no refusal).
func observeGeminiBefore038(u *geminiCall) []accum.Observation {
	return observeGeminiBuild(u, gemini{noStarted: true, noBlock: true})
}

// observeGeminiBefore040 reads 0.38.x and 0.39.x (no refusal).
func observeGeminiBefore040(u *geminiCall) []accum.Observation {
	return observeGeminiBuild(u, gemini{noBlock: true})
}

func observeGeminiBuild(u *geminiCall, g gemini) []accum.Observation {
	if u.SessionUpdate != "tool_call" && u.SessionUpdate != "tool_call_update" {
		return nil
	}
	o := u.Base()
	text, hasText := u.Texts()
	geminiTitle(&o, &u.ToolCall)
	if hasText {
		rest := geminiBanner(&o, text)
		switch {
		case o.Status == accum.StatusFailed:
			geminiFailure(&o, rest)
		case o.Status.Ended():
			n := len(o.Texts)
			g.final(&o, rest)
			switch {
			case o.Cancelled:
				geminiCancelIfAsked(&o, rest, n)
			case g.noCancelShown && u.SessionUpdate == "tool_call_update" && o.Status == accum.StatusCompleted &&
				len(o.Texts) > n && !geminiIsDebugReport(rest) && o.Exit == nil && o.Signal == "" && !o.Failed:
				geminiStoppedIfAsked(&o)
			}
		case rest != "" && o.Shell != accum.ShellNo:
			o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: accum.Snapshot, Text: rest})
		}
	} else if o.Status == accum.StatusFailed {
		o.Failed = true
	}
	return []accum.Observation{o}
}

func askGemini(u *geminiCall) accum.Observation {
	o := u.askBase()
	geminiTitle(&o, &u.ToolCall)
	if text, ok := u.Texts(); ok {
		o.ApprovalReason = strings.TrimSpace(geminiBanner(&o, text))
	}
	return o
}

// geminiTitle reads the command from the title of an execute call,
// splitting off a banner that older releases appended to it.
func geminiTitle(o *accum.Observation, tc *ToolCall) {
	if o.Shell != accum.ShellYes || tc.Title == nil {
		return
	}
	title := *tc.Title
	if i := geminiBannerStart.FindStringIndex(title); i != nil {
		geminiBanner(o, title[i[0]:])
		title = title[:i[0]]
	}
	if title = strings.TrimSpace(title); title != geminiToolTitle {
		o.Command = title
	}
}

// geminiToolTitle is the tool's own name, which 0.36 titles the calls it
// replays on session/load with: no command.
const geminiToolTitle = "Shell"

var (
	// geminiBannerRe is "[current working directory DIR]" or "[in DIR]",
	// then an optional " (description)" and an optional " [background]".
	geminiBannerRe    = regexp.MustCompile(`(?s)^\s*\[(?:current working directory|in) ([^\]\n]*)\](?: \((.*)\))?( \[background\])?[ \t]*(?:\n|$)`)
	geminiBannerStart = regexp.MustCompile(` \[(?:current working directory|in) [^\]\n]*\]`)
)

// geminiBanner reads a leading banner into o and returns the rest of the
// text. The description ends at the last ")" before an optional
// " [background]" at the end of the banner line(s).
func geminiBanner(o *accum.Observation, text string) string {
	orig := text
	if o.Command != "" {
		// Some releases repeat the command before the banner.
		if rest, ok := strings.CutPrefix(text, o.Command+" ["); ok {
			text = "[" + rest
		}
	}
	m := geminiBannerRe.FindStringSubmatchIndex(text)
	if m == nil {
		return orig
	}
	if cwd := strings.TrimSpace(text[m[2]:m[3]]); cwd != "" {
		o.Cwd = cwd
	}
	if m[4] >= 0 {
		o.Description = text[m[4]:m[5]]
	}
	if m[6] >= 0 {
		o.Background = true
	}
	return text[m[1]:]
}

var (
	geminiExited    = regexp.MustCompile(`^Command exited with code:? (-?\d+)\.?$`)
	geminiSignalled = regexp.MustCompile(`^Command terminated by signal:? (\S+?)\.?$`)
	// geminiExitedExact and geminiSignalledExact are the markers as
	// Gemini CLI's shell tool spells them (the bundles of 0.20 to 0.61):
	// a colon, no closing period. Other spellings ("... with code 7", as
	// other agents and Gemini's own interactive shell mode write it) are
	// a line the command printed, which 0.36.0 shows as the text.
	geminiExitedExact    = regexp.MustCompile(`^Command exited with code: (-?\d+)$`)
	geminiSignalledExact = regexp.MustCompile(`^Command terminated by signal: ([^\s.]+)$`)
	// geminiCancelled is the head of a cancel notice: "Command cancelled
	// by user." (the display), "Command was cancelled by user before it
	// could complete." or "... start." (the debug report). Only in the
	// shape geminiNoticeEnd allows after it is it Gemini's.
	geminiCancelled  = regexp.MustCompile(`^Command (?:was )?cancell?ed by (?:the )?user(?: before it could (?:start|complete))?\.`)
	geminiSpawnError = regexp.MustCompile(`^Command failed: `)
	// geminiBeforeCancel introduces the output printed before a cancel.
	geminiBeforeCancel = "Output before cancellation:"
	// geminiBackground is Gemini's notice for a command that goes on in
	// the background, one line, in the two shapes its bundles write:
	// "Command moved to background (PID: N). Output hidden. Press Ctrl+B
	// to view." (0.36.0, 0.45.2 and 0.61.0; earlier releases without the
	// hint) and, from 0.38.0 (see forVersion), "Background process
	// started with PID N." for an is_background command still running
	// after its delay; N is "undefined" when Gemini got no pid. Other
	// words about a background command ("Command running in background
	// with ID: ...", Claude Code's) are a command's own output, which
	// 0.36.0 shows as the text.
	geminiBackground = regexp.MustCompile(`^(?:Command moved to background \(PID: (?:\d+|undefined)\)\.|Background process started with PID (?:\d+|undefined)\.$)`)
	// geminiDebugStart is how a debug-mode result begins (its first
	// field), and geminiDebugEnd how it ends when it names no exit code:
	// 0.45 writes only the fields that have a value ("Output: ...\nProcess
	// Group PGID: N" for an exit 0, "Exit Code" only when nonzero,
	// "Signal" only for a signal).
	geminiDebugStart = regexp.MustCompile(`^(?:Command|Output|Stdout): `)
	geminiDebugEnd   = regexp.MustCompile(`\nProcess Group PGID: (?:\d+|\(none\))\s*$`)
	// geminiTimedOut is the notice of a command Gemini stopped after its
	// inactivity timeout ("Command was automatically cancelled because it
	// exceeded the timeout of 5.0 minutes without output."), in the
	// display (0.45) or the debug report.
	geminiTimedOut = regexp.MustCompile(`^Command was automatically cancell?ed because it exceeded the timeout of \d+(?:\.\d+)? minutes without output\.`)
	// geminiTimedOutExact is the notice as Gemini CLI spells it in every
	// bundle ("cancelled"); "canceled" is a line the command printed.
	geminiTimedOutExact = regexp.MustCompile(`^Command was automatically cancelled because it exceeded the timeout of \d+(?:\.\d+)? minutes without output\.`)
	// geminiNoticeEnd is what Gemini writes after the head of a cancel or
	// timeout notice (0.36.0, 0.45.2): nothing, the display's "Output
	// before cancellation:" line after a blank one, or the debug
	// report's "Below is the output ..." or "There was no output ..."
	// sentence. 0.36.0's display of a command that printed output is
	// that output itself: a notice head followed by anything else is a
	// line the command printed.
	geminiNoticeEnd = regexp.MustCompile(`^(?:$|\n\n` + geminiBeforeCancel + `\n| Below is the output before it was cancell?ed:\n| There was no output before it was cancell?ed\.$)`)
)

// geminiNotice reports whether text (trimmed) is a notice whose head re
// matches, in a shape Gemini writes it (geminiNoticeEnd).
func geminiNotice(re *regexp.Regexp, text string) bool {
	m := re.FindStringIndex(text)
	return m != nil && geminiNoticeEnd.MatchString(text[m[1]:])
}

// geminiBlocked is what 0.40.0 on (see forVersion) show, plain and
// --debug alike, for a command they refused to run because it holds
// command substitution ($(...), backticks, <(...) or >(...);
// detectCommandSubstitution in the shell tool): the call still ends
// `completed`, but the command never ran.
const geminiBlocked = "Blocked: command substitution detected in shell command."

// geminiFinal reads the text of a `completed` frame with the newest
// build's rules, and the markers in any spelling (loose).
func geminiFinal(o *accum.Observation, text string) { gemini{loose: true}.final(o, text) }

// final reads the text of a `completed` frame of build g.
func (g gemini) final(o *accum.Observation, text string) {
	// A debug report begins with its first field, and names an exit code
	// or ends with the process group.
	if geminiIsDebugReport(text) {
		geminiDebugResult(o, text)
		return
	}
	line := trimBlank(text)
	// Gemini writes the markers below instead of an empty output, each
	// on one line; the cancel notice alone is followed by the output
	// printed before the cancel. A marker on the first of several lines
	// is a line the command printed.
	oneLine := !strings.Contains(line, "\n")
	exited, signalled, timedOut := geminiExitedExact, geminiSignalledExact, geminiTimedOutExact
	if g.loose {
		exited, signalled, timedOut = geminiExited, geminiSignalled, geminiTimedOut
	}
	if m := exited.FindStringSubmatch(line); m != nil {
		o.Exit = CodeFromString(m[1]).Exit(accum.ExitText, true)
		return
	}
	if m := signalled.FindStringSubmatch(line); m != nil {
		o.Signal = NormalizeSignal(m[1])
		return
	}
	if geminiNotice(timedOut, line) {
		o.TimedOut = true
		geminiCancelOutput(o, text)
		return
	}
	if geminiNotice(geminiCancelled, line) {
		// "Command cancelled by user.\n\nOutput before cancellation:\n..."
		// The header is a notice; what follows the marker is the real
		// output the command printed before it was stopped.
		geminiCancel(o, text)
		return
	}
	if oneLine && geminiSpawnError.MatchString(line) {
		o.Failed = true
		return
	}
	if line == geminiBlocked && !g.noBlock && (o.Command == "" || strings.ContainsAny(o.Command, "(`")) {
		// Gemini refused the command: a failure without an exit code,
		// its sentence a notice, and no output. Its check needs a "("
		// ($(...), <(...), >(...), PowerShell's subexpressions) or a
		// backtick in the command: without one, the command printed the
		// sentence.
		o.Failed, o.FailNotice = true, notice(line)
		return
	}
	if oneLine && geminiBackground.MatchString(line) && !(g.noStarted && strings.HasPrefix(line, geminiStartedPrefix)) {
		o.Background = true
		return
	}
	if text != "" {
		o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: accum.Final, Text: text})
	}
}

// The fields of the debug-mode result, in their order: the head
// (geminiDebugHead: Command and Directory in older releases), the output
// (geminiDebugOutput: Output, or older releases' Stdout, then Stderr),
// Gemini's own Error, and geminiDebugTail, those that end it, each on one
// line. After Output comes only Error (geminiDebugAfterOutput), after
// Stdout Stderr and Error (geminiDebugAfterStdout).
var (
	geminiDebugHead        = []string{"Command", "Directory"}
	geminiDebugOutput      = []string{"Output", "Stdout"}
	geminiDebugAfterOutput = []string{"Error"}
	geminiDebugAfterStdout = []string{"Stderr", "Error"}
	geminiDebugTail        = []string{"Exit Code", "Signal", "Background PIDs", "Process Group PGID"}
)

// geminiDebugResult reads the debug-mode result. The fields that end it
// (geminiDebugTail) are its last lines, in their order: a line that looks
// like one of them above another, or out of that order, is a line of the
// output. The output may hold lines that look like any field (0.61 sends
// "Output: Command: ls\nOutput: fake\n..." for a command that printed
// "Command: ls\nOutput: fake"), so each field is found from the side of
// the report it is fixed to: the head fields and the output field open
// the report, in their order, and are read from the start, a head value
// running to the first later field that starts a line; Stderr and Error,
// between the output and the trailing fields, are read from the end (the
// last occurrence of each).
//
// The report that opens with Output (0.36.0 on; the older ones open with
// Command or Stdout) writes a trailing field only with a value: Exit Code
// only when nonzero, Signal only for a signal, never "(none)" (the shell
// tool's own description says so). In that report a line that would give
// a field another value is a line of the output, and ends the trailing
// fields: so neither a debug report of output that ends in such lines nor
// 0.36.0's plain display of it (the output itself) yields an exit code
// from what the command printed.
func geminiDebugResult(o *accum.Observation, text string) {
	fields := map[string]string{}
	terse := strings.HasPrefix(text, "Output: ")
	text = "\n" + text
	end := len(strings.TrimRight(text, blank))
	for next := len(geminiDebugTail); end > 0; {
		j := strings.LastIndexByte(text[:end], '\n')
		line, found := text[j+1:end], false
		for k := next - 1; k >= 0; k-- {
			if v, ok := strings.CutPrefix(line, geminiDebugTail[k]+": "); ok {
				if !terse || geminiTerseValue(geminiDebugTail[k], v) {
					fields[geminiDebugTail[k]], next, found = v, k, true
				}
				break
			}
		}
		if !found || j < 0 {
			break
		}
		end = j
	}
	// From the start: Command, Directory, each where the one before it
	// ended and running to the first later field that starts a line; then
	// the output field (Output, or Stdout).
	pos, out := 0, ""
	for i, f := range geminiDebugHead {
		key := "\n" + f + ": "
		if !strings.HasPrefix(text[pos:end], key) {
			continue
		}
		v, next := pos+len(key), end
		for _, later := range [...][]string{geminiDebugHead[i+1:], geminiDebugOutput, geminiDebugAfterStdout} {
			for _, g := range later {
				if j := strings.Index(text[v:next], "\n"+g+": "); j >= 0 {
					next = v + j
				}
			}
		}
		fields[f], pos = text[v:next], next
	}
	for _, f := range geminiDebugOutput {
		if key := "\n" + f + ": "; strings.HasPrefix(text[pos:end], key) {
			pos, out = pos+len(key), f
			break
		}
	}
	// From the end: Error, and Stderr (only after Stdout); the output
	// runs to the first of them.
	middle := geminiDebugAfterOutput
	if out == "Stdout" {
		middle = geminiDebugAfterStdout
	}
	for i := len(middle) - 1; i >= 0; i-- {
		key := "\n" + middle[i] + ": "
		if j := strings.LastIndex(text[pos:end], key); j >= 0 {
			fields[middle[i]] = text[pos+j+len(key) : end]
			end = pos + j
		}
	}
	if out != "" {
		fields[out] = text[pos:end]
	}
	val := func(k string) (string, bool) {
		v, ok := fields[k]
		if !ok {
			return "", false
		}
		if t := strings.TrimSpace(v); t == "(empty)" || t == "(none)" {
			return "", true
		}
		return v, true
	}
	if v, ok := val("Output"); ok {
		if v != "" {
			o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: accum.Final, Text: v})
		}
	} else {
		// Older releases: really separated streams.
		for _, s := range []struct {
			key    string
			stream accum.Stream
		}{{"Stdout", accum.Stdout}, {"Stderr", accum.Stderr}} {
			if v, ok := val(s.key); ok {
				o.Texts = append(o.Texts, accum.Text{Stream: s.stream, Kind: accum.Final, Text: v})
			}
		}
	}
	if v, ok := val("Signal"); ok && strings.TrimSpace(v) != "" && strings.TrimSpace(v) != "0" {
		// "Signal: 0" (Qwen Code 0.15) is no signal.
		o.Signal = NormalizeSignal(v)
	}
	if v, ok := val("Exit Code"); ok {
		// A report names exit code 0 beside the signal that killed a
		// process (Qwen Code 0.15: "Exit Code: 0\nSignal: 9"): that 0
		// is no exit status.
		if c := CodeFromString(trimBlank(v)); c.Known && !(o.Signal != "" && c.Value == 0) {
			o.Exit = c.Exit(accum.ExitText, true)
		}
	}
	if v, ok := val("Error"); ok && strings.TrimSpace(v) != "" {
		o.Failed = true
	}
}

// geminiTerseValue says whether v is a value the report that opens with
// Output writes for the trailing field f: none is "(none)" or empty, and
// an exit code or a signal is not 0 (the field is left out then).
func geminiTerseValue(f, v string) bool {
	v = strings.TrimSpace(v)
	if v == "" || v == "(none)" {
		return false
	}
	if f == "Exit Code" || f == "Signal" {
		return v != "0"
	}
	return true
}

// geminiCancel reads a cancel notice: "Command cancelled by user." (a
// notice, quoted in the outcome reason), then, after "Output before
// cancellation:", the real output the command printed before it.
func geminiCancel(o *accum.Observation, text string) {
	o.Cancelled, o.CancelNotice = true, notice(text)
	geminiCancelOutput(o, text)
}

// geminiCancelIfAsked marks the cancel notice of a `completed` final,
// text as sent, as Gemini's only if the user cancelled the turn: Gemini
// writes it only after the client's session/cancel (its abort signal),
// and 0.36.0 shows a command's output itself in the same place, so
// without a cancel the same words are what the command printed
// (tricky-cancel).
// The output after the notice's marker, if any, is o.Texts[from].
func geminiCancelIfAsked(o *accum.Observation, text string, from int) {
	o.Worded.Cancelled, o.WordsIfCancelAsked = true, true
	if len(o.Texts) > from {
		o.Texts[from].Whole = text
		return
	}
	o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: accum.Final, Whole: text})
}

// geminiStoppedIfAsked marks a live `completed` final of output alone, on a
// build before 0.33.0, as the display of a command the user's cancel
// stopped, if the user cancelled the turn while the call was open: those
// builds show such a command as its output, with no notice (they write
// "Command cancelled by user." only for an empty output). Without that
// cancel the command ended by itself, and the mark is dropped; the text is
// output either way. A replayed call comes as a `tool_call`, not this.
func geminiStoppedIfAsked(o *accum.Observation) {
	o.Cancelled, o.Worded.Cancelled, o.WordsIfCancelAsked = true, true, true
}

// geminiIsDebugReport says whether text reads as a debug-mode result: it
// begins with its first field, and names an exit code or ends with the
// process group.
func geminiIsDebugReport(text string) bool {
	return geminiDebugStart.MatchString(text) && (strings.Contains(text, "\nExit Code: ") || geminiDebugEnd.MatchString(text))
}

// geminiBelowCancel introduces the output in the debug report of a
// cancelled command ("Command was cancelled by user before it could
// complete. Below is the output before it was cancelled:\ntick1...").
const geminiBelowCancel = "Below is the output before it was cancelled:"

// geminiCancelOutput reads the real output printed before a cancel or a
// timeout, after the notice's marker; the notice itself is not output.
func geminiCancelOutput(o *accum.Observation, text string) {
	for _, marker := range []string{geminiBeforeCancel, geminiBelowCancel} {
		if _, out, ok := strings.Cut(text, marker); ok {
			out = strings.TrimPrefix(strings.TrimPrefix(out, "\r"), "\n")
			if out != "" {
				o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: accum.Final, Text: out})
			}
			return
		}
	}
}

var geminiUserCancel = regexp.MustCompile(`(?i)\bcancell?ed by (?:the )?user\b|\brejected\b|\baborted\b`)

// geminiFailure reads a `failed` frame: the command could not be spawned
// (Failed), or the user cancelled it (Cancelled). The text is Gemini's
// error message, not output.
func geminiFailure(o *accum.Observation, text string) {
	if geminiUserCancel.MatchString(text) {
		geminiCancel(o, text)
		return
	}
	o.Failed = true
}
