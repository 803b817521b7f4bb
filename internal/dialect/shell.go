package dialect

import (
	"bytes"
	"path"
	"regexp"
	"regexp/syntax"
	"strings"

	"github.com/acpnorm/acpnorm/internal/jsonlit"
)

// This file holds helpers every dialect may use: lenient string fields,
// turning the command an agent reports (a string or an argv array, often
// wrapped in `bash -lc '...'`) into the command line the user would type,
// and finding an agent's notices in an output text cheaply (findFrom,
// anchored).

// Str is a JSON string that tolerates other JSON types: a number, bool,
// array or object leaves it unset instead of failing the frame.
type Str struct {
	S   string
	Set bool
}

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (s *Str) UnmarshalJSON(b []byte) error {
	*s = Str{}
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		s.S, s.Set = jsonlit.Unquote(b)
	}
	return nil
}

// UnmarshalJSONString implements jsonlit.StringUnmarshaler: what
// UnmarshalJSON keeps of a string literal, decoded by the fast decoder in
// the pass that validates it.
func (s *Str) UnmarshalJSONString(text string) { *s = Str{S: text, Set: true} }

// rawText is a string member kept as its literal and unquoted only when
// read: for big outputs that a frame often repeats in another field and
// reads once. The literal aliases the frame, so it must be read within
// Read. Another JSON type reads as absent, as with Str.
type rawText struct {
	lit []byte
	// text is lit decoded, when decoded says so: a content text that the
	// frame's walk decoded already (decodeElided, jsonlit.Elide).
	text    string
	decoded bool
}

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (r *rawText) UnmarshalJSON(b []byte) error {
	*r = rawText{}
	if len(b) > 0 && b[0] == '"' {
		r.lit = b
	}
	return nil
}

// TakeLit implements jsonlit.LitTaker: a text the elided decode took out
// of the frame, decoded (a content text) or only validated (a lazy one).
func (r *rawText) TakeLit(l *jsonlit.Lit) bool {
	if l.Bytes != nil {
		return false
	}
	*r = rawText{lit: l.Raw, text: l.Text, decoded: !l.Lazy}
	return true
}

// Str unquotes the text.
func (r rawText) Str() Str {
	if r.decoded {
		return Str{S: r.text, Set: true}
	}
	s, ok := jsonlit.Unquote(r.lit)
	return Str{S: s, Set: ok}
}

// firstLine returns the text's first line, through its line break, when
// that break comes within the literal's first limit bytes: only those are
// decoded. ok is false otherwise (a longer first line, or none that
// ends): the caller reads the whole text. A text the walk decoded already
// gives its first line whatever limit is.
func (r rawText) firstLine(limit int) (line string, ok bool) {
	if r.decoded {
		if i := strings.IndexByte(r.text, '\n'); i >= 0 {
			return r.text[:i+1], true
		}
		return "", false
	}
	if len(r.lit) < 2 {
		return "", false
	}
	body := r.lit[1 : len(r.lit)-1]
	body = body[:min(len(body), limit)]
	// A line break is a \n escape (JSON has no raw one): the first
	// backslash that starts an escape and is followed by n. Each escape is
	// stepped over whole (a \u escape's hex digits hold no backslash).
	for i := 0; ; {
		k := bytes.IndexByte(body[i:], '\\')
		if k < 0 || i+k+1 >= len(body) {
			return "", false
		}
		i += k
		if body[i+1] == 'n' {
			lit := make([]byte, 0, i+4)
			lit = append(append(append(lit, '"'), body[:i+2]...), '"')
			s, ok := jsonlit.Unquote(lit)
			return s, ok
		}
		i += 2
	}
}

// HasPrefix reports whether the text starts with p, which must be plain
// ASCII without quotes or backslashes. Unless an escape comes within
// len(p) bytes, no byte of the text is unquoted: plain bytes stand for
// themselves, and a byte that is not ASCII (or the closing quote) cannot
// stand for a byte of p.
func (r rawText) HasPrefix(p string) bool {
	if len(r.lit) < 2 {
		return false
	}
	body := r.lit[1:]
	if n := min(len(p), len(body)); bytes.IndexByte(body[:n], '\\') < 0 {
		return len(body) > len(p) && string(body[:len(p)]) == p
	}
	return strings.HasPrefix(r.Str().S, p)
}

// CommandLine is a command as agents send it: a string ("npm test") or an
// argv array (["bash","-lc","npm test"]). Any other JSON type leaves it
// empty. Line is the command as sent: nothing is unwrapped here, because a
// `sh -c '...'` that a model wrote is the command; only a dialect whose
// adapter wraps every command (Codex) removes that wrapper, with Unwrapped.
type CommandLine struct {
	// Line is the command line: the string verbatim, or the argv joined
	// with spaces, quoting words that need it.
	Line string
	// argv is the array form, when the command was one.
	argv []string
}

// UnmarshalJSON implements json.Unmarshaler; it never fails.
func (c *CommandLine) UnmarshalJSON(b []byte) error {
	*c = CommandLine{}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil
	}
	switch b[0] {
	case '"':
		if s, ok := jsonlit.Unquote(b); ok {
			c.Line = s
		}
	case '[':
		argv := []string{}
		strs := true
		jsonlit.EachElement(b, func(val []byte) bool {
			var it Str
			it.UnmarshalJSON(val)
			strs = it.Set
			argv = append(argv, it.S)
			return strs
		})
		if strs { // else not an argv of strings
			c.argv = argv
			c.Line = JoinArgv(argv)
		}
	}
	return nil
}

// UnmarshalJSONFast implements jsonlit.FastUnmarshaler: UnmarshalJSON in
// the fast decoder's pass, the string (or each word of the argv) decoded
// where the decoder validates it.
func (c *CommandLine) UnmarshalJSONFast(d *jsonlit.Dec) bool {
	*c = CommandLine{}
	switch d.Kind() {
	case '"':
		s, ok := d.Str()
		c.Line = s
		return ok
	case '[':
		argv := []string{}
		strs := true
		if !d.Elements(func() bool {
			if !strs || d.Kind() != '"' {
				strs = false // not an argv of strings: only validated
				_, ok := d.Value()
				return ok
			}
			s, ok := d.Str()
			argv = append(argv, s)
			return ok
		}) {
			return false
		}
		if strs {
			c.argv = argv
			c.Line = JoinArgv(argv)
		}
		return true
	}
	_, ok := d.Value()
	return ok
}

// Unwrapped is the command with one shell wrapper removed: the argv
// SHELL [-flags] -c SCRIPT, or a string of exactly that form with one
// quoted script, gives SCRIPT (once: a wrapper inside SCRIPT stays). For
// dialects whose adapter wraps every command in its own shell.
func (c CommandLine) Unwrapped() string {
	if c.argv != nil {
		if script, ok := unwrapArgv(c.argv); ok {
			return script
		}
		return c.Line
	}
	return UnwrapShellString(c.Line)
}

// shells are the interpreters whose `-c SCRIPT` wrapper is removed.
var shells = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "ash": true, "fish": true}

// JoinArgv turns an argv into one command line: its words joined with
// spaces, quoting words that need it.
func JoinArgv(argv []string) string {
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = quoteWord(a)
	}
	return strings.Join(words, " ")
}

// unwrapArgv returns SCRIPT when argv is exactly SHELL [-flags...] SCRIPT
// and one of the flags is -c.
func unwrapArgv(argv []string) (string, bool) {
	if len(argv) < 3 || !shells[path.Base(argv[0])] {
		return "", false
	}
	hasC := false
	for _, f := range argv[1 : len(argv)-1] {
		if len(f) < 2 || f[0] != '-' || strings.HasPrefix(f, "--") {
			return "", false
		}
		if strings.ContainsRune(f[1:], 'c') {
			hasC = true
		}
	}
	if !hasC {
		return "", false
	}
	return argv[len(argv)-1], true
}

// UnwrapShellString removes a shell wrapper from a command string:
// `/bin/zsh -lc 'npm test'` becomes `npm test`. A string that is not
// exactly such a wrapper with one quoted script is returned unchanged.
func UnwrapShellString(s string) string {
	t := strings.TrimSpace(s)
	words, ok := splitWords(t)
	if !ok {
		return s
	}
	if script, ok := unwrapArgv(words); ok {
		return script
	}
	return s
}

// UnquoteWord returns the text of s when s is exactly one shell word that
// uses quotes or escapes (`'ls -la'`, `"printf 'x'"'$i'`), and s unchanged
// otherwise (several words, operators outside quotes, or nothing quoted).
func UnquoteWord(s string) string {
	t := strings.TrimSpace(s)
	if !strings.ContainsAny(t, `'"\`) {
		return s
	}
	words, ok := splitWords(t)
	if !ok || len(words) != 1 {
		return s
	}
	return words[0]
}

// splitWords splits a command line into words with POSIX quoting (single
// quotes, double quotes with backslash escapes, backslash outside quotes).
// It gives up (false) on anything it cannot read exactly: unbalanced
// quotes, or shell operators outside quotes.
func splitWords(s string) ([]string, bool) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case ch == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, false
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case ch == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\\\"$`\n", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, false
			}
			inWord = true
		case ch == '\\':
			if i+1 >= len(s) {
				return nil, false
			}
			i++
			cur.WriteByte(s[i])
			inWord = true
		case strings.IndexByte(";&|<>()$`\n*?", ch) >= 0:
			return nil, false
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, true
}

// quoteWord quotes a word for a POSIX shell when it needs it.
func quoteWord(w string) string {
	if w == "" {
		return "''"
	}
	safe := true
	for _, r := range w {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%^", r)) {
			safe = false
			break
		}
	}
	if safe {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// findFrom is re.FindStringSubmatchIndex(s) for an unanchored pattern
// whose every match holds one of lits, preceded at most by newlines: the
// search starts at the first of lits, less the newlines just before it,
// where the first match can start at the earliest. Without it the regexp
// engine steps through a whole command output (no literal prefix lets it
// skip ahead), which costs far more than the rest of reading the frame.
func findFrom(re *regexp.Regexp, s string, lits ...string) []int {
	return findFromIf(true, re, s, lits...)
}

// findFromIf is findFrom when may is true, and nil otherwise: the caller
// has seen that s cannot match (for a pattern anchored at the end, that s
// does not end as a match does), so s is not searched.
func findFromIf(may bool, re *regexp.Regexp, s string, lits ...string) []int {
	if !may {
		return nil
	}
	from := -1
	for _, lit := range lits {
		if i := strings.Index(s, lit); i >= 0 && (from < 0 || i < from) {
			from = i
		}
	}
	if from < 0 {
		return nil
	}
	for from > 0 && s[from-1] == '\n' {
		from--
	}
	m := re.FindStringSubmatchIndex(s[from:])
	for i := range m {
		if m[i] >= 0 {
			m[i] += from
		}
	}
	return m
}

// anchored is a regexp anchored at the start of the text (^) that looks
// at the text's first byte (and, given withLine, its first line) before
// it runs: the first bytes a match can start with are worked out from the
// compiled pattern once. The notices and headers the dialects match this
// way are tried on every output text, which almost never is one, and the
// regexp package takes 50–300 ns to fail each (BenchmarkAnchored), where
// the first byte takes 2–3. The methods it does not override run
// unguarded.
type anchored struct {
	*regexp.Regexp
	// first[c] says a match can start with byte c; all is true when the
	// set could not be bounded (a match can be empty or start with any
	// byte), and the regexp then always runs.
	first [256]bool
	all   bool
	// line, when set (withLine), is a literal every match holds on the
	// text's first line: a text that passes the first byte but whose
	// first line lacks it is not run either.
	line string
}

// withLine sets a's first-line literal (see anchored.line) and returns a.
// The pattern must guarantee it: every match holds lit before the first
// line break of the text.
func (a *anchored) withLine(lit string) *anchored {
	a.line = lit
	return a
}

// mustAnchored compiles pattern, which must be anchored at the start of
// the text, or panics.
func mustAnchored(pattern string) *anchored {
	a := &anchored{Regexp: regexp.MustCompile(pattern)}
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		panic(err)
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		panic(err)
	}
	if prog.StartCond()&syntax.EmptyBeginText == 0 {
		panic("dialect: mustAnchored of a pattern not anchored at the text's start: " + pattern)
	}
	a.all = !firstBytes(prog, uint32(prog.Start), &a.first, make([]bool, len(prog.Inst)))
	return a
}

// firstBytes marks in first every byte a match from instruction pc can
// start with. It returns false when that is unbounded: pc can match the
// empty text, or any byte, or a rune class it does not work out.
func firstBytes(prog *syntax.Prog, pc uint32, first *[256]bool, seen []bool) bool {
	if seen[pc] {
		return true
	}
	seen[pc] = true
	in := &prog.Inst[pc]
	switch in.Op {
	case syntax.InstAlt, syntax.InstAltMatch:
		return firstBytes(prog, in.Out, first, seen) && firstBytes(prog, in.Arg, first, seen)
	case syntax.InstCapture, syntax.InstNop, syntax.InstEmptyWidth:
		// An empty-width test (\b, $) only narrows what follows.
		return firstBytes(prog, in.Out, first, seen)
	case syntax.InstFail:
		return true
	case syntax.InstRune1, syntax.InstRune:
		if syntax.Flags(in.Arg)&syntax.FoldCase != 0 {
			return false
		}
		runes := in.Rune
		if in.Op == syntax.InstRune1 || len(runes) == 1 {
			runes = []rune{runes[0], runes[0]}
		}
		for i := 0; i+1 < len(runes); i += 2 {
			lo, hi := runes[i], runes[i+1]
			for c := lo; c <= min(hi, 0x7F); c++ {
				first[c] = true
			}
			if hi >= 0x80 {
				// A rune past ASCII starts with a byte of 0x80 or more, and
				// so does text that is not UTF-8, which the regexp reads as
				// U+FFFD.
				for c := 0x80; c < 0x100; c++ {
					first[c] = true
				}
			}
		}
		return true
	}
	return false // InstMatch, InstRuneAny, InstRuneAnyNotNL
}

// skips says no match can start at s: s has a first byte, and no match
// starts with it, or its first line lacks the literal every match holds
// there.
func (a *anchored) skips(s string) bool {
	if s == "" {
		return false
	}
	if !a.all && !a.first[s[0]] {
		return true
	}
	if a.line == "" {
		return false
	}
	line, _, _ := strings.Cut(s, "\n")
	return !strings.Contains(line, a.line)
}

// MatchString is regexp's, skipping a text no match can start.
func (a *anchored) MatchString(s string) bool { return !a.skips(s) && a.Regexp.MatchString(s) }

// FindStringSubmatch is regexp's, skipping a text no match can start.
func (a *anchored) FindStringSubmatch(s string) []string {
	if a.skips(s) {
		return nil
	}
	return a.Regexp.FindStringSubmatch(s)
}

// FindStringIndex is regexp's, skipping a text no match can start.
func (a *anchored) FindStringIndex(s string) []int {
	if a.skips(s) {
		return nil
	}
	return a.Regexp.FindStringIndex(s)
}

// FindSubmatch is regexp's, skipping a text no match can start.
func (a *anchored) FindSubmatch(b []byte) [][]byte {
	if a.skipsBytes(b) {
		return nil
	}
	return a.Regexp.FindSubmatch(b)
}

// skipsBytes is skips for a byte slice, which it reads in place (a
// string of it would be a copy).
func (a *anchored) skipsBytes(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	if !a.all && !a.first[b[0]] {
		return true
	}
	if a.line == "" {
		return false
	}
	line, _, _ := bytes.Cut(b, []byte{'\n'})
	return !bytes.Contains(line, []byte(a.line))
}

// folded is a case-insensitive regexp ((?i)) that runs only on a text
// holding one of its literals, ASCII letters in either case: every match
// holds one. The regexp package has no literal to skip ahead to in such a
// pattern and steps through the whole text: an OpenCode timeout note of
// 200 bytes takes it 9 µs to find no abort in (BenchmarkFolded).
type folded struct {
	*regexp.Regexp
	lits []string
}

// mustFolded compiles pattern, whose every match holds one of lits, or
// panics. Each of lits must be lower-case ASCII without k or s: (?i)
// matches those two to runes past ASCII too (K, ſ), which the literal
// test, byte for byte, would not see.
func mustFolded(pattern string, lits ...string) *folded {
	if !strings.HasPrefix(pattern, "(?i)") || len(lits) == 0 {
		panic("dialect: mustFolded of a pattern without (?i) or without literals: " + pattern)
	}
	for _, lit := range lits {
		if lit == "" || strings.ContainsFunc(lit, func(r rune) bool { return r >= 0x80 || r == 'k' || r == 's' || 'A' <= r && r <= 'Z' }) {
			panic("dialect: mustFolded literal not lower-case ASCII without k or s: " + lit)
		}
	}
	return &folded{Regexp: regexp.MustCompile(pattern), lits: lits}
}

// MatchString is regexp's, skipping a text that holds none of the
// literals.
func (f *folded) MatchString(s string) bool {
	for _, lit := range f.lits {
		if holdsFold(s, lit) {
			return f.Regexp.MatchString(s)
		}
	}
	return false
}

// holdsFold says whether s holds lit (lower-case ASCII without k or s,
// see mustFolded) with its letters in either case: strings.EqualFold of
// such a literal and as many bytes of s is that.
func holdsFold(s, lit string) bool {
	for i := 0; i+len(lit) <= len(s); i++ {
		if lowerASCII(s[i]) == lit[0] && strings.EqualFold(s[i:i+len(lit)], lit) {
			return true
		}
	}
	return false
}

// lowerASCII is c with an ASCII upper-case letter made lower-case.
func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func (Str) wantedJSON() wantType     { return wantString }
func (rawText) wantedJSON() wantType { return wantString }
