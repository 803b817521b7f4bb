package dialect

import (
	"regexp"
	"regexp/syntax"
)

// anchored is a regexp anchored at the start of the text (^) that looks
// at the text's first byte before it runs: the first bytes a match can
// start with are worked out from the compiled pattern once. The notices
// and headers the dialects match this way are tried on every output text,
// which almost never is one, and the regexp package takes 50–300 ns to
// fail each (BenchmarkAnchored), where the first byte takes 2–3. The
// methods it does not override run unguarded.
type anchored struct {
	*regexp.Regexp
	// first[c] says a match can start with byte c; all is true when the
	// set could not be bounded (a match can be empty or start with any
	// byte), and the regexp then always runs.
	first [256]bool
	all   bool
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
// starts with it.
func (a *anchored) skips(s string) bool { return s != "" && !a.all && !a.first[s[0]] }

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
	if len(b) > 0 && a.skips(string(b[:1])) {
		return nil
	}
	return a.Regexp.FindSubmatch(b)
}
