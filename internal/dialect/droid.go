package dialect

import (
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/acpnorm/acpnorm/internal/accum"
)

// droid reads Factory Droid (`droid exec --output-format acp-daemon`,
// agentInfo.name "@factory/cli"), recorded at 0.215.0, 0.117.0, 0.109.3,
// 0.105.1 and 0.99.0 (the same frames; rawInput has no `summary` before
// 0.117.0).
//
// What it sends, and what it means here:
//   - `tool_call` kind `execute`, `pending`, title "`<cmd>` (low)": the
//     command in backticks and a RISK LEVEL suffix, never the command
//     itself. `rawInput {summary, command, riskLevelReason, riskLevel}`:
//     the command from `command`, the description from `summary`; the
//     title gives the command only when rawInput has none (backticks and
//     the suffix removed, CommandFromTitle). A permission ask's approval
//     reason is the risk level and its reason. One ask may cover two calls
//     ("Allow both") and name only the last: the other call's own frames
//     say how it ended.
//   - WITHOUT a client terminal: terminal content with a uuid that no
//     client created (it changes nothing), then a bare `completed` or
//     `failed`, with no output and no exit code ever. `failed` (nonzero,
//     signal or cancel) is FAILED with an unknown exit; `completed` is no
//     evidence of exit 0 (a command killed at its timeout says completed):
//     UNKNOWN.
//   - WITH one (the client offered `terminal: true`): every command runs
//     through the client's terminal/create, polled with terminal/output
//     until its exitStatus, then killed and released; the core reads all
//     of that (terminal.go), and the kill after the exit changes nothing.
//   - A cancel: `failed`, then a SECOND `tool_call` for the same id (`kind:
//     "other"`, `title: "Tool call"`, `rawInput: {}`) and another `failed`
//     whose text (content and `rawOutput.text`) is "Error: Tool execution
//     cancelled by user", also the rejection text ("Error: Tool execution
//     cancelled: Batch cancelled" when it cancels a call on its own). That second tool_call
//     says nothing (kind other names no tool, its title is not a command),
//     and the text is the cancel notice: CANCELLED, never output.
//   - A session/load replay carries texts it never sent live: the output,
//     "Error: Command failed (exit code: N)" (or "Error: Command terminated
//     by signal: SIGTERM": that signal) and, after a blank line, a
//     trailing "[Process exited with code N]": exit N from those markers
//     (text), which are not output; its cancel notice there may lack the
//     "Error: " prefix. A real failure is replayed `failed` with a header
//     that names the trailer's code: on a `completed` result, or against
//     its trailer, a line like the header is the command's own output; so
//     are the cancel notice's words there: the notice is Droid's only
//     alone, on a call not `completed`, with no exit trailer.
type droid struct {
	// noMiddleMark: the build writes no "[... truncated N bytes from
	// middle section ...]" (see droidMiddleCut).
	noMiddleMark bool
}

func init() { register(droid{}) }

// forVersion implements versioned: only 0.215.0 of the builds studied
// writes the middle-section mark; 0.99.0, 0.105.1, 0.109.3 and 0.117.0
// have no such words. An unknown build reads with the newest rules.
func (droid) forVersion(v Version) Dialect {
	return droid{noMiddleMark: v.Before(droidMiddleMarkFrom)}
}

// droidMiddleMarkFrom is the first build after 0.117.0, the newest
// studied without the middle-section mark. npm has no build between
// 0.117.0 and 0.215.0 (neither of droid nor of @factory/cli-linux-x64,
// looked up 2026-12-05), so no recorded build sits in the gap.
const droidMiddleMarkFrom = "0.117.1"

func (droid) Info() Info {
	// Auth method signs: factory-api-key (beside device-pairing, which
	// any agent may offer).
	return Info{
		Name:               "droid",
		AgentNames:         []string{"@factory/cli", "factory-droid", "droid"},
		AuthMethodIDs:      []string{"factory-api-key"},
		Summary:            "Factory Droid: command from rawInput (the title carries a risk suffix), no output or exit code unless the client owns the terminal, cancel notices kept out of output.",
		ClientCapabilities: richCapabilities,
	}
}

// droidInput is Droid's `rawInput` for its Execute tool.
type droidInput struct {
	Command         CommandLine `json:"command"`
	Summary         Str         `json:"summary"`
	RiskLevel       Str         `json:"riskLevel"`
	RiskLevelReason Str         `json:"riskLevelReason"`
}

// droidCall is a tool call frame of Droid.
type droidCall struct {
	ToolCall
	RawInput  droidInput `json:"rawInput"`
	RawOutput struct {
		Text Str `json:"text"`
	} `json:"rawOutput"`
	Meta *TerminalMeta `json:"_meta"`
}

func (d droid) read(msg []byte, scope string) (Frame, error) {
	if d.noMiddleMark {
		return readFrame(msg, scope, observeDroidNoMiddleMark, askDroid)
	}
	return readFrame(msg, scope, observeDroid, askDroid)
}

var (
	// droidTitle is "`<cmd>` (<risk>)".
	droidTitle = regexp.MustCompile("(?s)^`(.*)`(?: \\((?:low|medium|high|[a-z]+)\\))?$")
	// droidCancel is its cancel and rejection notice.
	droidCancel = regexp.MustCompile(`(?s)^(?:Error: )?Tool execution (?:cancelled|canceled|rejected|denied)\b.*$`)
	// droidHeader opens the result its Execute tool writes (with "Error: "
	// when it is a tool error), a line of words about the command: exit N,
	// a signal, exit 127 or 126 in words, or a timeout.
	droidHeader = regexp.MustCompile(`(?m)\A(?:Error: )?(?:Command failed \(exit code: (-?\d+)\)|Command terminated by signal: ([A-Za-z0-9]+)|(Command not found\. The command or program may not be installed or not in PATH\.)|(Command not executable\. Check file permissions\.)|(Command timed out after \d+(?:\.\d+)? seconds\. Consider increasing the timeout for long-running commands\.))[ \t]*$`)
	// droidSaved ends a result whose output it cut and saved to a file.
	droidSaved = regexp.MustCompile(`\n\nFull command output saved to: [^\n]*\([0-9.]+[KMG]?B\)[ \t]*$`)
	// droidSandbox ends a result when its sandbox refused the network.
	droidSandbox = regexp.MustCompile(`\n\nSandbox: network access was denied to: [^\n]*$`)
	// droidSkipped is a line its summary of a long output puts where it
	// left lines out (read only where droidSummarized holds).
	droidSkipped = regexp.MustCompile(`(?m)^\[\.\.\. \d+ lines skipped \.\.\.\]$\n?`)
	// droidTooLong is the line its summary of an output too long to
	// summarize puts where it left the middle out, with the blank line it
	// writes on each side (read only where droidTooLongAt holds).
	droidTooLong = regexp.MustCompile(`\n\n\[\.\.\. output too long to summarize \.\.\.\]\n\n`)
	// droidMiddle is the line 0.215.0 puts between the first and the last
	// 8 KiB of an output over 16 KiB (read only where droidMiddleCut
	// holds).
	droidMiddle = regexp.MustCompile(`(?m)^\[\.\.\. truncated (\d+) bytes from middle section \.\.\.\]$`)
	// droidExited ends a replayed output.
	droidExited = regexp.MustCompile(`(?:\n\n)?\[Process exited with code (-?\d+)\]\s*$`)
)

// droidOtherTools are tools of Droid that are no shell but have the kind
// execute: 0.215.0 gives a tool the kind of the first keyword its name
// holds (jyH: "bash", "exec", "shell", "command" or "run" make execute)
// and titles a tool it does not describe with its name (kyH), so the
// mission tools StartMissionRun and EndFeatureRun arrive titled so, of
// kind execute.
var droidOtherTools = map[string]bool{"StartMissionRun": true, "EndFeatureRun": true}

// knownTool implements knownTools: a tool of Droid's the dialect knows is
// no shell, though its kind is execute.
func (u *droidCall) knownTool() bool {
	return u.Title != nil && droidOtherTools[strings.TrimSpace(*u.Title)] && u.RawInput.Command.Line == ""
}

// droidBase reads what updates and asks share: the command, description
// and whether it is a shell call.
func droidBase(u *droidCall, o accum.Observation) accum.Observation {
	in := &u.RawInput
	switch {
	case u.knownTool():
		o.Shell = accum.ShellNo // its kind execute says nothing
	case in.Command.Line != "":
		o.Command = in.Command.Line
		o.Shell = accum.ShellYes
	case u.Kind != nil && *u.Kind == "execute" && u.Title != nil:
		if m := droidTitle.FindStringSubmatch(strings.TrimSpace(*u.Title)); m != nil && strings.TrimSpace(m[1]) != "" {
			o.Command, o.CommandFromTitle = m[1], true
		}
	}
	if in.Summary.S != "" {
		o.Description = in.Summary.S
	}
	return o
}

func observeDroid(u *droidCall) []accum.Observation { return observeDroidBuild(u, droid{}) }

// observeDroidNoMiddleMark reads a build without the middle-section mark.
func observeDroidNoMiddleMark(u *droidCall) []accum.Observation {
	return observeDroidBuild(u, droid{noMiddleMark: true})
}

func observeDroidBuild(u *droidCall, d droid) []accum.Observation {
	switch u.SessionUpdate {
	case "tool_call", "tool_call_update":
	case "terminal_update", "terminal_output_chunk":
		if o, ok := readTerminalUpdate(&u.ToolCall); ok {
			return []accum.Observation{o}
		}
		return nil
	default:
		return nil
	}
	o := droidBase(u, u.Base())
	u.Meta.ApplyTerminalMeta(&o)
	text, ok := u.Texts()
	if !ok && u.RawOutput.Text.Set {
		text, ok = u.RawOutput.Text.S, true
	}
	if ok && o.Shell != accum.ShellNo && !(o.Opens && !o.Status.Ended()) {
		droidText(&o, text, !d.noMiddleMark)
	}
	return []accum.Observation{o}
}

// droidText reads a text Droid sends where output goes: its cancel
// notice (only on a call not `completed`, and without the exit trailer:
// Droid writes it for a call that ran to no exit; the same words before
// "[Process exited with code N]", or under `completed`, are the output of
// a command that printed them), or (replays) its Execute tool's result,
// which wraps the output in words of its own that are never output:
//   - a header line: "Command failed (exit code: N)" (exit N), "Command
//     terminated by signal: SIG", "Command not found. ..." (exit 127),
//     "Command not executable. ..." (exit 126), or "Command timed out after
//     N seconds. ..." followed by a blank line and "Partial output before
//     timeout:" (TimedOut, the header the notice), each read only where
//     Droid writes it (droidHeaderHolds);
//   - trailers, each after a blank line: "Sandbox: network access was
//     denied to: ...", "Full command output saved to: PATH (SIZE)" (the
//     output was cut: truncated), "[Process exited with code N]" (exit N);
//   - for an empty output, "Command completed successfully" or "Command
//     terminated early due to SIGPIPE (exit code 141)";
//   - in a long output it summarized, lines "[... N lines skipped ...]"
//     (only between the head and tail it keeps: droidSummarized) where it
//     left lines out, or "[... output too long to summarize ...]" (only
//     between the head and tail of its fallback, droidTooLongAt, or as the
//     whole text): they are dropped and the output is truncated;
//   - a line it cut to its two ends (droidLineCutIn): kept as sent, the
//     output truncated;
//   - in an output over 16 KiB (0.215.0), "[... truncated N bytes from
//     middle section ...]" between its first and last 8 KiB, if its
//     summary kept it (only with the saved trailer: droidMiddleCut): it is
//     dropped, and the output had N+16,384 bytes.
func droidText(o *accum.Observation, s string, middleMark bool) {
	t := strings.TrimSpace(s)
	if t == "" {
		return
	}
	// The trailers first, from the end, then the header of what is left.
	exitedAt := findFrom(droidExited, s, "[Process exited with code ")
	if exitedAt == nil && o.Status != accum.StatusCompleted && droidCancel.MatchString(t) {
		o.Cancelled, o.CancelNotice = true, notice(t)
		return
	}
	exited := Code{} // the trailer's exit code, when there is one
	if loc := exitedAt; loc != nil {
		exited = CodeFromString(s[loc[2]:loc[3]])
		droidExit(o, exited)
		s = s[:loc[0]]
	}
	truncated, saved := false, false
	if loc := droidSaved.FindStringIndex(s); loc != nil {
		s, truncated, saved = s[:loc[0]], true, true
	}
	if loc := droidSandbox.FindStringIndex(s); loc != nil {
		s = s[:loc[0]]
	}
	if m := droidHeader.FindStringSubmatchIndex(s); m != nil && droidHeaderHolds(m, s, o.Status, exited) {
		switch {
		case m[2] >= 0:
			droidExit(o, CodeFromString(s[m[2]:m[3]]))
		case m[4] >= 0:
			o.Signal = NormalizeSignal(s[m[4]:m[5]])
		case m[6] >= 0:
			droidExit(o, Code{Value: 127, Known: true})
		case m[8] >= 0:
			droidExit(o, Code{Value: 126, Known: true})
		case m[10] >= 0:
			o.TimedOut, o.FailNotice = true, notice(s[:m[1]])
		}
		s = s[m[1]:]
		if o.TimedOut {
			s = strings.TrimPrefix(s, "\n\nPartial output before timeout:\n")
		} else {
			s = strings.TrimPrefix(s, "\n") // the header's own line end
		}
	}
	if s == "Command completed successfully" || s == "Command terminated early due to SIGPIPE (exit code 141)" {
		s = ""
	}
	if loc := droidTooLongAt(s); loc != nil {
		// The head and the tail, each a run of whole lines: no
		// skipped-lines mark of Droid's is in such a text.
		s, truncated = s[:loc[0]]+"\n"+s[loc[1]:], true
	} else if s == droidTooLongMark {
		s, truncated = "", true
	} else if droidSummarized(s) {
		s, truncated = droidSkipped.ReplaceAllString(s, ""), true
	}
	var total int64 // the output's size, when Droid's middle mark says it
	if middleMark && saved {
		s, total = droidMiddleCut(s)
	}
	if droidLineCutIn(s) {
		truncated = true // the text stays as sent: the cut is gone
	}
	if s == "" || o.TerminalID != "" {
		return // the client's terminal has the output
	}
	o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: textKind(o.Status.Ended()), Text: s, Truncated: truncated, TotalBytes: total})
}

// droidMiddleRead is how many bytes of an output over it Droid 0.215.0
// reads for its Execute result: the first and the last half.
const droidMiddleRead = 16384

// droidMiddleCut takes Droid's middle-section mark out of s, a result
// with the "Full command output saved to" trailer, and returns the
// output's size it states. 0.215.0's Execute tool reads an output over
// 16 KiB (readSummaryOutput, maxBytes 16384) as its first 8,192 bytes,
// "\n\n[... truncated N bytes from middle section ...]\n\n" and its last
// 8,192 bytes from their first whole line, N the bytes between them
// (size less 16,384), says it truncated, and the result then ends with
// the saved trailer; its summary (droidTooLongAt, droidSummarized) may
// keep the mark or not. So the mark is Droid's only with that trailer,
// on a line of its own between blank lines (or the text's ends, which the
// summary trims); it goes with them, the ends joined by one line end. Droid
// writes one: a text with two such lines keeps both (which is Droid's is
// not known).
func droidMiddleCut(s string) (string, int64) {
	var at []int
	for _, m := range droidMiddle.FindAllStringSubmatchIndex(s, -1) {
		head, tail := s[:m[0]], s[m[1]:]
		if (head == "" || head == "\n" || strings.HasSuffix(head, "\n\n")) && (tail == "" || tail == "\n" || strings.HasPrefix(tail, "\n\n")) {
			if at != nil {
				return s, 0
			}
			at = m
		}
	}
	if at == nil {
		return s, 0
	}
	var total int64
	if n, err := strconv.ParseInt(s[at[2]:at[3]], 10, 64); err == nil && n <= math.MaxInt64-droidMiddleRead {
		total = n + droidMiddleRead
	}
	head, tail := s[:at[0]], s[at[1]:]
	head = strings.TrimSuffix(head, "\n") // the blank line before it
	if tail = strings.TrimPrefix(tail, "\n\n"); tail == "\n" {
		tail = "" // its line end and the blank line after it
	}
	return head + tail, total
}

// droidSummaryEnd is how many lines Droid's summary of a long output
// (over 12,000 chars in 0.215.0, 24,000 in 0.109.3) keeps at each end:
// it keeps the first 30 lines, the last 30 and those around a keyword,
// writes "[... N lines skipped ...]" for each gap and trims the result
// (headTailLines 30 in both builds' bundles). The trim takes the output's
// last line end and any blank lines at its start or end, so its
// recordings hold 30 lines before the mark and 29 after it; 25 leaves
// room for a few blank lines more.
const droidSummaryEnd = 25

// droidSummarized says whether the "[... N lines skipped ...]" lines in s
// are Droid's: its summary has at least droidSummaryEnd lines before the
// first and after the last. A shorter output holding such a line is no
// summary (Droid leaves an output that short alone): the command printed
// it.
func droidSummarized(s string) bool {
	locs := droidSkipped.FindAllStringIndex(s, -1)
	if locs == nil {
		return false
	}
	head := s[:locs[0][0]]
	tail := s[locs[len(locs)-1][1]:]
	return strings.Count(head, "\n") >= droidSummaryEnd && strings.Count(tail, "\n")+1 >= droidSummaryEnd
}

// droidTooLongMark is what Droid writes where no summary of a long output
// fits its limit; it is the whole text when even its fallback
// (droidTooLongAt) fails.
const droidTooLongMark = "[... output too long to summarize ...]"

// droidTooLongLeast is less than the length of any text Droid writes
// around droidTooLongMark. Its fallback for an output no summary fits
// (iF0 in 0.215.0, the same in 0.99.0 to 0.117.0) takes whole lines from
// the head and from the tail in turn, each cut to 600 characters at most,
// until the next would pass its limit (12,000 characters in 0.215.0,
// 24,000 before) less the mark's 41: more than 11,350 characters, each at
// least a byte.
const droidTooLongLeast = 11000

// droidTooLongAt returns where, in s, droidTooLong is Droid's: in a text
// of at least droidTooLongLeast bytes, with as many lines after it as
// before it, or one fewer (its fallback takes a head line first, then a
// tail line, and stops at the first that does not fit). A shorter text, or
// one the mark does not halve so, holds a line the command printed.
func droidTooLongAt(s string) []int {
	if len(s) < droidTooLongLeast {
		return nil
	}
	for _, loc := range droidTooLong.FindAllStringIndex(s, -1) {
		head, tail := strings.Count(s[:loc[0]], "\n")+1, strings.Count(s[loc[1]:], "\n")+1
		if head == tail || head == tail+1 {
			return loc
		}
	}
	return nil
}

// droidLineCutJoiner joins the two ends Droid keeps of a line it cut.
const droidLineCutJoiner = " ... [truncated] ... "

// droidLineMax is the longest line Droid's summary keeps whole; a cut
// line has its first droidLineCutHead and last droidLineCutTail
// characters (UTF-16 code units, as JavaScript counts), droidLineMax in
// all.
const (
	droidLineMax     = 600
	droidLineCutHead = (droidLineMax - len(droidLineCutJoiner)) / 2              // 289
	droidLineCutTail = droidLineMax - len(droidLineCutJoiner) - droidLineCutHead // 290
)

// droidLineCutIn says whether a line of s is one Droid cut. Its summary
// of an Execute output ($jH in 0.215.0, the same in 0.99.0 to 0.117.0),
// for an output over its limit (12,000 characters in 0.215.0, 24,000
// before), first cuts every line over 600 characters (pWM): A =
// floor(600/2) - 21/2 = 289.5, line.substring(0, A) + " ... [truncated]
// ... " + line.substring(line.length - A), that is the first 289 units
// and the last 290 (substring truncates both); the text is then made
// well formed (a surrogate pair it split is one U+FFFD, as JSON gives
// here). When the cut lines fit its limit it returns them so, with no
// other mark, and without the saved trailer when the output was at most
// 16 KiB: that line is the only sign. Only a line of exactly that shape
// is Droid's; the words in any other line are the command's.
func droidLineCutIn(s string) bool {
	if !strings.Contains(s, droidLineCutJoiner) {
		return false
	}
	for line := range strings.SplitSeq(s, "\n") {
		if len(line) < droidLineMax || !strings.Contains(line, droidLineCutJoiner) {
			continue
		}
		if at := utf16Index(line, droidLineCutHead); at >= 0 && strings.HasPrefix(line[at:], droidLineCutJoiner) && utf16Len(line) == droidLineMax {
			return true
		}
	}
	return false
}

// droidHeaderHolds says whether the header droidHeader matched (m) is
// Droid's, as its real replays write one: a failure header only on a
// result that is not `completed` (Droid ends every failure `failed`),
// naming the code of the "[Process exited with code N]" trailer when
// there is one (a signal, any nonzero code); its timeout header (sent as
// `completed` too) only without that trailer. Otherwise the line is the
// command's own first line, which the status or the trailer contradicts
// (a command that printed "Command failed (exit code: 5)" and exited 0).
func droidHeaderHolds(m []int, s string, status accum.Status, exited Code) bool {
	if m[10] >= 0 { // the timeout header
		return !exited.Known
	}
	if status == accum.StatusCompleted {
		return false
	}
	if !exited.Known {
		return true
	}
	switch {
	case m[2] >= 0:
		c := CodeFromString(s[m[2]:m[3]])
		return c.Known && c.Value == exited.Value
	case m[6] >= 0:
		return exited.Value == 127
	case m[8] >= 0:
		return exited.Value == 126
	}
	return exited.Value != 0 // a signal
}

// droidExit sets the exit code c, read from Droid's text, when known.
func droidExit(o *accum.Observation, c Code) {
	if c.Known {
		o.Exit = accum.StrongerExit(o.Exit, &accum.Exit{Code: c.Value, Source: accum.ExitText})
	}
}

func askDroid(u *droidCall) accum.Observation {
	o := droidBase(u, u.askBase())
	o.ApprovalReason = u.askReason()
	if o.ApprovalReason == "" && u.RawInput.RiskLevel.S != "" {
		o.ApprovalReason = "risk level " + u.RawInput.RiskLevel.S
		if r := strings.TrimSpace(u.RawInput.RiskLevelReason.S); r != "" {
			o.ApprovalReason += ": " + r
		}
	}
	return o
}

// endsWordedFailed: Droid's "Command failed (exit code: N)" header is its
// own only on a `failed` final (see droidHeaderHolds and endsWordedFailed).
func (*droidCall) endsWordedFailed() {}
