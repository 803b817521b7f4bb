package dialect

import (
	"regexp"
	"strings"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/acpnorm/acpnorm/internal/jsonlit"
)

// auggie reads `auggie --acp` (Augment), tool `launch-process`.
//
// What it sends, and what it means here:
//   - kind `execute`, title "Run `<command>`", `rawInput {command, cwd?,
//     max_wait_seconds?, wait?}`; `wait: false` starts the command in the
//     background (Background). The title gives the command only when
//     rawInput has none.
//   - No live output is known; text on a frame that has not ended is not
//     read as output.
//   - Final `completed` (the status for a nonzero exit is not known; it is
//     never read as the exit). `rawOutput {"output": text}` (or the same
//     text in content) embeds the result in tags, after an optional
//     "Here are the results from executing the command." preamble:
//     `<return-code>` (ExitText: the only exit code), `<output>`,
//     `<stdout>`, `<stderr>`. Tag contents carry one leading and one
//     trailing newline, which are removed (exactly one each).
//   - Streams: `<output>` alone is the combined terminal stream. `<stdout>`
//     (a sibling tool) and `<stderr>` are really separated streams: when
//     `<stderr>` is present beside `<output>`, the agent has split stderr
//     off, so `<output>` is read as stdout only (a combined stream that
//     also held stderr would repeat it) and both are reported as Stdout and
//     Stderr, with no Combined stream invented.
//   - Untagged final text is reported as the combined output.
//   - `failed`: Cancelled when the text says the user rejected or
//     cancelled it, else Failed; that text is the agent's, not output
//     (of a tagged result, only the words outside the tags: the tags'
//     bodies are the command's).
type auggie struct{}

func init() { register(auggie{}) }

func (auggie) Info() Info {
	return Info{
		Name:               "auggie",
		AgentNames:         []string{"auggie", "augment"},
		Summary:            "Auggie launch-process: command from rawInput or Run `cmd` title, wait:false background, final <return-code>/<output>/<stdout>/<stderr> tagged text.",
		ClientCapabilities: richCapabilities,
	}
}

// auggieInput is `rawInput` of launch-process.
type auggieInput struct {
	Command        CommandLine `json:"command"`
	Cwd            Str         `json:"cwd"`
	Wait           *bool       `json:"wait"`
	MaxWaitSeconds Code        `json:"max_wait_seconds"`
}

// auggieOutput is `rawOutput`: an object `{"output": text}`, or the text
// itself in some builds.
type auggieOutput struct {
	Text string
	Set  bool
}

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (a *auggieOutput) UnmarshalJSON(b []byte) error {
	*a = auggieOutput{}
	var s Str
	if _ = s.UnmarshalJSON(b); !s.Set {
		jsonlit.EachMember(b, func(key string, val []byte) {
			if key == "OUTPUT" {
				s.UnmarshalJSON(val)
			}
		})
	}
	a.Text, a.Set = s.S, s.Set
	return nil
}

func (auggieOutput) ownFields() []string { return []string{"output"} }

// auggieCall is a tool call frame of Auggie.
type auggieCall struct {
	ToolCall
	RawInput  *auggieInput `json:"rawInput"`
	RawOutput auggieOutput `json:"rawOutput"`
}

func (auggie) read(msg []byte, scope string) (Frame, error) {
	return readFrame(msg, scope, observeAuggie, askAuggie)
}

func observeAuggie(u *auggieCall) []accum.Observation {
	if u.SessionUpdate != "tool_call" && u.SessionUpdate != "tool_call_update" {
		return nil
	}
	o := u.Base()
	auggieInputs(&o, u)
	if o.Shell == accum.ShellNo || !o.Status.Ended() {
		return []accum.Observation{o}
	}
	text, ok := u.RawOutput.Text, u.RawOutput.Set
	if !ok {
		text, ok = u.Texts()
	}
	if o.Status == accum.StatusFailed {
		// The agent's words say whether the user stopped it; a tagged
		// result's bodies are the command's, whatever words they hold.
		r, tagged := parseAuggieResult(text)
		words := text
		if tagged {
			words = r.words
		}
		if auggieCancelled.MatchString(words) {
			o.Cancelled = true
		} else {
			o.Failed = true
		}
		if tagged {
			r.apply(&o)
		}
		return []accum.Observation{o}
	}
	if ok {
		if r, tagged := parseAuggieResult(text); tagged {
			r.apply(&o)
		} else if text != "" {
			o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: accum.Final, Text: text})
		}
	}
	return []accum.Observation{o}
}

func askAuggie(u *auggieCall) accum.Observation {
	o := u.askBase()
	auggieInputs(&o, u)
	o.ApprovalReason = u.askReason()
	return o
}

var (
	auggieTitle     = regexp.MustCompile("(?s)^\\s*Run `(.*)`\\s*$")
	auggieCancelled = regexp.MustCompile(`(?i)\brejected\b|\bcancell?ed\b|\bdenied\b|\bdeclined\b`)
)

// auggieInputs reads command, cwd and the background flag.
func auggieInputs(o *accum.Observation, u *auggieCall) {
	if in := u.RawInput; in != nil {
		if in.Command.Line != "" {
			o.Command = in.Command.Line
			if o.Shell == accum.ShellUnknown {
				o.Shell = accum.ShellYes
			}
		}
		if in.Cwd.Set && in.Cwd.S != "" {
			o.Cwd = in.Cwd.S
		}
		if in.Wait != nil && !*in.Wait {
			o.Background = true
		}
	}
	if o.Command == "" && u.Title != nil {
		if m := auggieTitle.FindStringSubmatch(*u.Title); m != nil && o.Shell != accum.ShellNo {
			o.Command = m[1]
			o.Shell = accum.ShellYes
		}
	}
}

// auggieResult is the tagged result text taken apart.
type auggieResult struct {
	exit           Code
	output, stdout string
	stderr         string
	hasOutput      bool
	hasStdout      bool
	hasStderr      bool
	// words is the text outside the tags: Auggie's own.
	words string
}

// auggieTags are the result tags, in the order Auggie writes them.
var auggieTags = [...]string{"return-code", "output", "stdout", "stderr"}

// parseAuggieResult reads the tags of a result text; tagged is false when
// the text holds none. The tags are read one after the other from the
// start, each up to its closing tag (auggieClose), so that a tag the
// command itself printed, inside another's body, is that body's text; of
// a tag that comes twice, the first counts.
func parseAuggieResult(text string) (r auggieResult, tagged bool) {
	var seen [len(auggieTags)]bool
	var words strings.Builder
	for rest := text; ; {
		i, k := -1, 0 // where the first tag starts, and which it is
		for n, t := range auggieTags {
			if j := strings.Index(rest, "<"+t+">"); j >= 0 && (i < 0 || j < i) {
				i, k = j, n
			}
		}
		tag := auggieTags[k]
		if i < 0 {
			words.WriteString(rest)
			break
		}
		body := rest[i+len(tag)+2:]
		end := auggieClose(body, tag)
		if end < 0 {
			words.WriteString(rest)
			break
		}
		words.WriteString(rest[:i])
		words.WriteByte('\n')
		rest = body[end+len(tag)+3:]
		if seen[k] {
			continue
		}
		seen[k], tagged = true, true
		v := strings.TrimSuffix(strings.TrimPrefix(body[:end], "\n"), "\n")
		switch tag {
		case "return-code":
			r.exit = CodeFromString(trimBlank(v))
		case "output":
			r.output, r.hasOutput = v, true
		case "stdout":
			r.stdout, r.hasStdout = v, true
		case "stderr":
			r.stderr, r.hasStderr = v, true
		}
	}
	r.words = words.String()
	return r, tagged
}

// auggieClose finds the closing tag of body: the first "</tag>" that is
// followed only by whitespace and then another result tag or the end, so
// that output which itself prints "</output>" is kept.
func auggieClose(body, tag string) int {
	closing := "</" + tag + ">"
	first := -1
	for off := 0; ; {
		j := strings.Index(body[off:], closing)
		if j < 0 {
			return first
		}
		j += off
		if first < 0 {
			first = j
		}
		rest := strings.TrimLeft(body[j+len(closing):], " \t\r\n")
		if rest == "" {
			return j
		}
		for _, t := range auggieTags {
			if strings.HasPrefix(rest, "<"+t+">") {
				return j
			}
		}
		off = j + len(closing)
	}
}

// apply reports the result.
func (r auggieResult) apply(o *accum.Observation) {
	if e := r.exit.Exit(accum.ExitText, true); e != nil {
		o.Exit = accum.StrongerExit(o.Exit, e)
	}
	switch {
	case r.hasStdout || (r.hasOutput && r.hasStderr):
		out := r.stdout
		if !r.hasStdout {
			out = r.output
		}
		o.Texts = append(o.Texts,
			accum.Text{Stream: accum.Stdout, Kind: accum.Final, Text: out},
			accum.Text{Stream: accum.Stderr, Kind: accum.Final, Text: r.stderr})
	case r.hasOutput:
		o.Texts = append(o.Texts, accum.Text{Stream: accum.Combined, Kind: accum.Final, Text: r.output})
	case r.hasStderr:
		o.Texts = append(o.Texts, accum.Text{Stream: accum.Stderr, Kind: accum.Final, Text: r.stderr})
	}
}
