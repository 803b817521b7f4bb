package accum

import (
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Some agents print the command before its output, as a shell prompt
// would: "$ <command>\n". That echo is text about the command, not output.
// An echo is recognised only at the very start of a stream's output and
// only when it is this call's own command:
//
//   - the command verbatim, or with some of its file arguments resolved
//     against the call's cwd ("cat a.txt" echoed as "$ cat /w/a.txt");
//   - every line of a multi-line command, the first after "$ ", the others
//     after "$ ", "> " or nothing;
//   - each line ended by "\n" or "\r\n" (or by the end of the output);
//     after the last line the output may also follow directly ("$ echo
//     hihi" for `echo hi`), unless a space or tab follows, which makes the
//     line a longer command than this one.
//
// It is removed once (for commands up to maxEchoCommand bytes). Text that
// could still become the echo is held back until it either completes the
// echo or cannot; held text that does not become the echo is released
// unchanged, so nothing is lost. A line that merely starts with "$ ", or
// echoes another command, is output.

// echoState is where a stream is in recognising an echo.
type echoState uint8

const (
	echoUndecided echoState = iota // nothing decided yet; text may be held
	echoNone                       // the output does not start with an echo
	echoFound                      // the output starts with an echo
)

// echoFilter recognises the echo on one stream.
type echoFilter struct {
	state echoState
	// held is text held back while it could still be the echo: Delta text
	// (heldBytes says it came as raw bytes), or one whole Snapshot.
	held      []byte
	heldBytes bool
	heldTrunc bool // a held Delta said the producer dropped output
	heldSnap  *Text
	pat       *echoPattern // the command prepared for matching, cached
}

// pattern returns the prepared command, building it when the command or
// the cwd changed.
func (f *echoFilter) pattern(cmd, cwd string) *echoPattern {
	if f.pat == nil || f.pat.cmd != cmd || f.pat.cwd != cwd {
		f.pat = newEchoPattern(cmd, cwd)
	}
	return f.pat
}

// heldLen is the length of the text held back.
func (f *echoFilter) heldLen() int {
	if f.heldSnap != nil {
		return len(f.heldSnap.Text) + len(f.heldSnap.Bytes)
	}
	return len(f.held)
}

// echoMatch says how a text relates to an echo of a command.
type echoMatch uint8

const (
	echoNo      echoMatch = iota // the text does not start with the echo
	echoPartial                  // the text is a beginning of the echo
	echoFull                     // the text starts with the whole echo
)

// echoPattern is a command prepared for matching its echo: per line, its
// words, each with the form it takes resolved against the cwd when it can
// be a file argument. It is built once per command and cwd.
type echoPattern struct {
	cmd, cwd string
	lines    [][]echoWord
	bound    int // more than the longest echo can be
	// dir and sep are what a clean word is resolved against (see
	// echoWord.joined): the cwd and "/" ("" when the cwd is "/"); dir is
	// "" when the cwd is not clean, so every word's join is spelled out.
	dir, sep string
}

// maxEchoCommand bounds the commands whose echo is recognised. Deciding
// on held text costs up to the echo's length per observation, so a longer
// command (a rare, huge heredoc) is not looked for: its echo, if any,
// stays output, and nothing is held back.
const maxEchoCommand = 16 << 10

type echoWord struct {
	verbatim string
	// A file argument also matches resolved against the cwd
	// (filepath.Join(cwd, verbatim)): spelled out in resolved, or, when
	// joined, as the pattern's dir, sep and verbatim one after the other,
	// which is what the join is when the cwd and the word are clean (most
	// are; that spares a string per word). Neither: not a file argument.
	resolved string
	joined   bool
}

func newEchoPattern(cmd, cwd string) *echoPattern {
	p := &echoPattern{cmd: cmd, cwd: cwd}
	norm := strings.ReplaceAll(strings.TrimRight(cmd, "\r\n"), "\r\n", "\n")
	if strings.TrimSpace(norm) == "" || len(norm) > maxEchoCommand {
		return p
	}
	if cwd != "" && cwd != "." && filepath.Clean(cwd) == cwd {
		p.dir, p.sep = cwd, "/"
		if cwd == "/" {
			p.sep = ""
		}
	}
	p.bound = 4
	// One array holds the words of every line; each line is a slice of it.
	p.lines = make([][]echoWord, 0, strings.Count(norm, "\n")+1)
	all := make([]echoWord, 0, strings.Count(norm, "\n")+strings.Count(norm, " ")+1)
	for line := range strings.SplitSeq(norm, "\n") {
		start := len(all)
		i := 0
		for w := range strings.SplitSeq(line, " ") {
			ew := echoWord{verbatim: w}
			n := 0
			if i > 0 && cwd != "" && fileArgument(w) {
				if p.dir != "" && cleanRelative(w) {
					ew.joined, n = true, len(p.dir)+len(p.sep)+len(w)
				} else {
					ew.resolved = filepath.Join(cwd, w)
					n = len(ew.resolved)
				}
			}
			all = append(all, ew)
			p.bound += max(len(ew.verbatim), n) + 1
			i++
		}
		p.lines = append(p.lines, all[start:len(all):len(all)])
		p.bound += 4
	}
	return p
}

// cleanRelative says whether filepath.Join of a clean directory and w is
// the directory, a separator and w: w is relative and has no empty, "."
// or ".." element, so that the join cleans nothing away.
func cleanRelative(w string) bool {
	if w == "" || w[0] == '/' || w[len(w)-1] == '/' || strings.Contains(w, "//") {
		return false
	}
	for e := range strings.SplitSeq(w, "/") {
		if e == "." || e == ".." {
			return false
		}
	}
	return true
}

// resolvedOf is the word resolved against the cwd, spelled out ("" when
// it is not a file argument); for tests and messages, not for matching.
func (p *echoPattern) resolvedOf(w echoWord) string {
	if w.joined {
		return p.dir + p.sep + w.verbatim
	}
	return w.resolved
}

var (
	firstPrompt = []string{"$ "}
	laterPrompt = []string{"$ ", "> ", ""}
)

// match reports whether s starts with an echo of the command, and its
// length. atEnd says s is all the output there will be: an echo may then
// end without a line terminator.
func (p *echoPattern) match(s string, atEnd bool) (echoMatch, int) {
	if len(p.lines) == 0 {
		return echoNo, 0
	}
	pos := 0
	for i, line := range p.lines {
		prefixes := firstPrompt
		if i > 0 {
			prefixes = laterPrompt
		}
		m, n := echoNo, 0
		for _, pre := range prefixes {
			pm, pn := matchPrefix(s[pos:], pre)
			if pm == echoPartial {
				return echoPartial, 0
			}
			if pm == echoNo {
				continue
			}
			lm, ln := p.matchLine(s[pos+pn:], line)
			if lm == echoPartial {
				return echoPartial, 0
			}
			if lm == echoFull {
				m, n = echoFull, pn+ln
				break
			}
		}
		if m != echoFull {
			return echoNo, 0
		}
		pos += n
		switch rest := s[pos:]; {
		case strings.HasPrefix(rest, "\n"):
			pos++
		case strings.HasPrefix(rest, "\r\n"):
			pos += 2
		case rest == "" || rest == "\r":
			if atEnd && rest == "" {
				return echoFull, pos
			}
			return echoPartial, 0
		case i == len(p.lines)-1 && rest[0] != ' ' && rest[0] != '\t':
			// The whole command was echoed and its output follows
			// directly, with no line end between them. A space or tab
			// there would make the line a longer command: not this echo.
			return echoFull, pos
		default:
			return echoNo, 0
		}
	}
	return echoFull, pos
}

// matchPrefix matches the literal p at the start of s.
func matchPrefix(s, p string) (echoMatch, int) {
	switch {
	case strings.HasPrefix(s, p):
		return echoFull, len(p)
	case strings.HasPrefix(p, s):
		return echoPartial, 0
	}
	return echoNo, 0
}

// matchJoined is matchPrefix(s, a+b+c), without building a+b+c.
func matchJoined(s, a, b, c string) (echoMatch, int) {
	n := 0
	for _, part := range [...]string{a, b, c} {
		m, k := matchPrefix(s[n:], part)
		if m != echoFull {
			return m, 0 // echoPartial: s ends within part
		}
		n += k
	}
	return echoFull, n
}

// matchLine matches one command line at the start of s, word by word: each
// word verbatim, or a file argument resolved against the cwd.
func (p *echoPattern) matchLine(s string, words []echoWord) (echoMatch, int) {
	pos := 0
	for i, w := range words {
		if i > 0 {
			m, n := matchPrefix(s[pos:], " ")
			if m != echoFull {
				return m, 0
			}
			pos += n
		}
		m, n := matchPrefix(s[pos:], w.verbatim)
		switch {
		case m != echoNo:
		case w.joined:
			m, n = matchJoined(s[pos:], p.dir, p.sep, w.verbatim)
		case w.resolved != "":
			m, n = matchPrefix(s[pos:], w.resolved)
		}
		switch m {
		case echoPartial:
			return echoPartial, 0
		case echoNo:
			return echoNo, 0
		}
		pos += n
	}
	return echoFull, pos
}

// fileArgument says whether a command word could be a relative file name
// that an agent resolves against the cwd when it echoes the command.
func fileArgument(w string) bool {
	return w != "" && w[0] != '-' && w[0] != '/' && w[0] != '~' && !strings.ContainsAny(w, "'\"$`|&;<>()=*?\\")
}

// passes reports a text that filter would return alone and unchanged,
// decided without the pattern: once the stream has no echo, and every
// Delta after the echo was found. Most texts take this path, which
// allocates nothing.
func (f *echoFilter) passes(t Text) bool {
	return f.state == echoNone || f.state == echoFound && (t.Kind == Delta || !knownKind(t.Kind))
}

// noEcho decides that the stream has no echo (its output came straight
// from the process) and returns what was held back, to apply as output.
func (f *echoFilter) noEcho() []Text {
	if f.state != echoUndecided {
		return nil
	}
	var out []Text
	switch {
	case f.heldSnap != nil:
		out = []Text{*f.heldSnap}
	case len(f.held) > 0:
		t := Text{Kind: Delta, Truncated: f.heldTrunc}
		if f.heldBytes {
			t.Bytes = f.held
		} else {
			t.Text = string(f.held)
		}
		out = []Text{t}
	}
	f.state, f.held, f.heldSnap, f.heldBytes, f.heldTrunc = echoNone, nil, nil, false, false
	return out
}

// filter returns the texts to apply for t, holding back what could still
// be the echo of cmd. Only a bounded prefix of t is ever looked at or
// copied, so a big text costs nothing here.
func (f *echoFilter) filter(t Text, cmd, cwd string) []Text {
	if f.state == echoUndecided && strings.TrimSpace(cmd) == "" {
		f.state = echoNone
	}
	if f.state == echoNone {
		return []Text{t}
	}
	p := f.pattern(cmd, cwd)
	lim := p.bound
	if f.state == echoFound {
		if t.Kind == Delta || !knownKind(t.Kind) {
			return []Text{t}
		}
		// A restatement of the whole output starts with the echo again.
		if m, n := p.match(prefixOf(t, lim), true); m == echoFull {
			return []Text{cut(t, n)}
		}
		return []Text{t}
	}
	if t.Kind == Delta || !knownKind(t.Kind) {
		if len(t.Text)+len(t.Bytes) == 0 {
			return []Text{t} // no text, only flags: nothing to hold
		}
		if f.heldSnap != nil {
			// A held restatement then a delta: nothing reached the stream
			// yet, so the restatement is the start of the held text.
			f.held = append([]byte(nil), textBytes(*f.heldSnap)...)
			f.heldBytes, f.heldTrunc, f.heldSnap = f.heldSnap.Bytes != nil, f.heldSnap.Truncated, nil
		}
		if len(f.held) == 0 {
			// The common case: decide on this text alone, without copying.
			switch m, n := p.match(prefixOf(t, lim), false); m {
			case echoFull:
				f.state = echoFound
				if rest := cut(t, n); len(rest.Text)+len(rest.Bytes) > 0 || rest.Truncated {
					return []Text{rest}
				}
				return nil
			case echoNo:
				f.state = echoNone
				return []Text{t}
			}
		}
		f.held = append(f.held, textBytes(t)...)
		f.heldBytes = f.heldBytes || t.Bytes != nil
		f.heldTrunc = f.heldTrunc || t.Truncated
		return f.decide(cmd, cwd, false, t)
	}
	// A Snapshot, Window or Final restates the output: it supersedes what
	// was held.
	f.held, f.heldBytes, f.heldTrunc, f.heldSnap = nil, false, false, nil
	m, n := p.match(prefixOf(t, lim), t.Kind == Final)
	switch {
	case m == echoFull:
		f.state = echoFound
		return []Text{cut(t, n)}
	case m == echoPartial && t.Kind != Final:
		snap := t
		f.heldSnap = &snap
		return nil
	}
	f.state = echoNone
	return []Text{t}
}

// decide settles the held Delta text when it can; like is the Text the
// released part takes its other fields from.
func (f *echoFilter) decide(cmd, cwd string, atEnd bool, like Text) []Text {
	m, n := f.pattern(cmd, cwd).match(string(f.held), atEnd)
	switch {
	case m == echoPartial && !atEnd:
		return nil
	case m == echoFull:
		f.state = echoFound
	default:
		f.state = echoNone
		n = 0
	}
	rest := f.held[n:]
	bytesForm, trunc := f.heldBytes, f.heldTrunc
	f.held, f.heldBytes, f.heldTrunc = nil, false, false
	if len(rest) == 0 && !trunc {
		return nil
	}
	out := like
	out.Kind, out.Truncated, out.Valid = Delta, trunc, false
	if bytesForm {
		out.Text, out.Bytes = "", rest
	} else {
		out.Text, out.Bytes = string(rest), nil
	}
	return []Text{out}
}

// flush releases what is held when the stream ends: an exact echo is
// still removed, anything else is output.
func (f *echoFilter) flush(cmd, cwd string) []Text {
	if f.heldSnap != nil {
		t := *f.heldSnap
		f.heldSnap = nil
		p := f.pattern(cmd, cwd)
		if m, n := p.match(prefixOf(t, p.bound), true); m == echoFull {
			f.state = echoFound
			return []Text{cut(t, n)}
		}
		f.state = echoNone
		return []Text{t}
	}
	if len(f.held) == 0 {
		return nil
	}
	return f.decide(cmd, cwd, true, Text{Stream: Combined})
}

// prefixOf is at most the first n bytes of t's text.
func prefixOf(t Text, n int) string {
	if t.Bytes != nil {
		return string(t.Bytes[:min(n, len(t.Bytes))])
	}
	return t.Text[:min(n, len(t.Text))]
}

func textBytes(t Text) []byte {
	if t.Bytes != nil {
		return t.Bytes
	}
	return []byte(t.Text)
}

// cut is t without its first n bytes, in the form t had.
func cut(t Text, n int) Text {
	if t.Bytes != nil {
		t.Bytes = t.Bytes[n:]
	} else {
		// Cut inside a rune, a valid text is not valid any more.
		t.Valid = t.Valid && (n == len(t.Text) || utf8.RuneStart(t.Text[n]))
		t.Text = t.Text[n:]
	}
	return t
}
