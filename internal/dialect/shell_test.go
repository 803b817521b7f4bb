package dialect

import (
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUnwrapArgv(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want string
	}{
		{[]string{"bash", "-lc", "npm test"}, "npm test"},
		{[]string{"/bin/bash", "-lc", "printf 'a\\nb\\n'; exit 3"}, "printf 'a\\nb\\n'; exit 3"},
		{[]string{"sh", "-c", "ls | wc -l"}, "ls | wc -l"},
		{[]string{"/usr/bin/zsh", "-lc", "echo hi"}, "echo hi"},
		{[]string{"bash", "-l", "-c", "echo hi"}, "echo hi"},
		{[]string{"/bin/bash", "-lc", "sh -c 'echo hi'"}, "sh -c 'echo hi'"}, // once
		{[]string{"bash", "script.sh"}, "bash script.sh"},
		{[]string{"bash", "-l", "x"}, "bash -l x"},
		{[]string{"python3", "-c", "print(1)"}, "python3 -c 'print(1)'"},
		{[]string{"git", "commit", "-m", "it's"}, `git commit -m 'it'\''s'`},
		{[]string{"ls"}, "ls"},
	} {
		c := CommandLine{argv: tc.argv, Line: JoinArgv(tc.argv)}
		if got := c.Unwrapped(); got != tc.want {
			t.Errorf("Unwrapped(%q) = %q, want %q", tc.argv, got, tc.want)
		}
	}
}

func TestUnquoteWord(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`"printf '\\346'"'$i; done'`, `printf '\346'$i; done`},
		{`'ls -la'`, "ls -la"},
		{"ls -la", "ls -la"},
		{"ls", "ls"},
		{`'a' 'b'`, `'a' 'b'`},
		{`echo 'x' | wc`, `echo 'x' | wc`},
	} {
		if got := UnquoteWord(tc.in); got != tc.want {
			t.Errorf("UnquoteWord(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestUnwrapShellString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/bin/zsh -lc 'echo hello'", "echo hello"},
		{`bash -c "echo \"hi\" there"`, `echo "hi" there`},
		{`/bin/bash -lc 'printf '\''a'\'''`, "printf 'a'"},
		{"echo hello", "echo hello"},
		{"bash -lc echo hello", "bash -lc echo hello"},
		{"bash -lc 'unbalanced", "bash -lc 'unbalanced"},
		{"bash -lc 'x' && rm y", "bash -lc 'x' && rm y"},
		{"", ""},
	} {
		if got := UnwrapShellString(tc.in); got != tc.want {
			t.Errorf("UnwrapShellString(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCommandLineLenient(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`"npm test"`, "npm test"},
		{`["bash","-lc","npm test"]`, "bash -lc 'npm test'"},
		{`"sh -c 'echo hi'"`, "sh -c 'echo hi'"},
		{`["ls","-la"]`, "ls -la"},
		{`["ls",3]`, ""},
		{`42`, ""},
		{`{"x":1}`, ""},
		{`null`, ""},
	} {
		var v struct {
			Command CommandLine `json:"command"`
		}
		if err := json.Unmarshal([]byte(`{"command":`+tc.in+`}`), &v); err != nil {
			t.Errorf("%s: error %v", tc.in, err)
		}
		if v.Command.Line != tc.want {
			t.Errorf("%s: got %q want %q", tc.in, v.Command.Line, tc.want)
		}
	}
}

func TestReadSkipsWrongTypes(t *testing.T) {
	// A vendor field of an unexpected JSON type is left unset; the rest of
	// the frame is read. A syntax error fails the frame.
	msg := `{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","title":5,"kind":"execute","status":"completed","rawInput":{"command":7,"cwd":"/w"},"rawOutput":{"exit_code":"x","aggregated_output":"ok"}}}}`
	f, err := Read(Generic(), []byte(msg))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Observations) != 1 || f.Observations[0].Cwd != "/w" || len(f.Observations[0].Texts) != 1 || f.Observations[0].Texts[0].Text != "ok" {
		t.Errorf("got %s", showObs(f.Observations))
	}
	if _, err := Read(Generic(), []byte(msg[:len(msg)-1])); err == nil {
		t.Error("syntax error not reported")
	}
}

// TestOutputFieldsReadMatchesDecode holds the hand reading of an object
// rawOutput (jsonlit.EachMember) to what encoding/json decodes into OutputFields.
func TestOutputFieldsReadMatchesDecode(t *testing.T) {
	for _, in := range []string{
		`{}`,
		`{"exit_code":3,"stdout":"a","stderr":"b\u00e9","aggregated_output":"ab","formatted_output":"f","output":"o","signal":"KILL","timed_out":true}`,
		`{"EXIT_CODE":"4","ExitCode":5,"Stdout":null,"STDERR":7,"metadata":{"exit":1,"exitCode":"2","output":"m","x":[1,{"y":"]}"}]}}`,
		`{"metadata":"x","timed_out":"yes","signal":{"a":1}}`,
		`{"metadata":{"exit":1},"metadata":{"output":"z"},"timed_out":true,"timed_out":"no"}`,
		`{"metadata":{"exit":1},"metadata":null,"stdout":"a","stdout":"b"}`,
		`{"exit\u005fcode":9,"ſtdout":"long s","aggregated_output":"q\"uote\\"}`,
		` { "exit_code" : 1.0 , "stdout" : "sp" } `,
		`{"exitCode":0,"signal":9,"outcome":"failed","timedOut":true,"timed_out":null}`,
		`{"signal":"TERM","signal":null,"outcome":7,"timedOut":"x"}`,
		`{"signal":{"a":1},"outcome":"timed_out","signal":15.0}`,
	} {
		var want OutputFields
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			var te *json.UnmarshalTypeError
			if !errors.As(err, &te) {
				t.Fatalf("%s: %v", in, err)
			}
		}
		var got OutputFields
		got.read([]byte(in))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", in, got, want)
		}
	}
}

// TestFindFromMatchesRegexp holds findFrom to a plain search of the whole
// text with each pattern it serves.
func TestFindFromMatchesRegexp(t *testing.T) {
	pats := []struct {
		re   *regexp.Regexp
		lits []string
	}{
		{claudeTruncTrailer, []string{"[Output truncated ("}},
		{claudeLinesTrailer, []string{"... ["}},
		{claudeBgMoved, []string{"Command did not complete within its "}},
		{claudeTimedOut, []string{"Command timed out after "}},
		{opencodeMetaBlock, []string{"<shell_metadata>", "<bash_metadata>"}},
		{opencodeOldMarker, []string{"(Command "}},
	}
	texts := []string{
		"", "plain output\n",
		"out\n\n\n[Output truncated (123 bytes total): see file]\n",
		"[Output truncated (1 bytes total)] [Output truncated (2 bytes total)]",
		"[Output truncated (x bytes total)]\n\n[Output truncated (9 bytes total)]  ",
		"1\n62\n\n... [53779 lines truncated] ...", "... [x lines truncated] ...\n... [3 lines truncated] ...\n", "a ... [2 lines truncated] ... b",
		"a\nCommand did not complete within its 2m timeout and was moved to the background with ID: b1.",
		"Command did not complete within its x\nCommand did not complete within its 5s timeout and was moved to the background",
		"start\nCommand timed out after 2m 0.0s\n", "Command timed out after 1s\nmore",
		"out\n\n<shell_metadata>\ntimed out\n</shell_metadata>\n", "x<bash_metadata>a</shell_metadata>",
		"<bash_metadata>a</bash_metadata> tail", "out\n\n(Command timed out after 100 ms)", "(Command was aborted)\n\n(Command was aborted)",
	}
	for _, p := range pats {
		for _, s := range texts {
			if got, want := findFrom(p.re, s, p.lits...), p.re.FindStringSubmatchIndex(s); !reflect.DeepEqual(got, want) {
				t.Errorf("%s on %q: got %v want %v", p.re, s, got, want)
			}
		}
	}
}

// TestRawTextFirstLine holds firstLine to the whole text (checkFirstLine)
// on texts with escapes, line breaks and non-ASCII at and around the
// bounds tried.
func TestRawTextFirstLine(t *testing.T) {
	for _, text := range firstLineSeeds() {
		checkFirstLine(t, text)
	}
}

func firstLineSeeds() []string {
	return []string{
		"exit: 0\nout\n", "exit: 3", "", "\n", "a\\nb\nc", `a\\\nb` + "\n", "\u00e9\nx", "exit: 0 [truncated: 9 bytes]\r\n" + strings.Repeat("y\n", 400),
		"\"q\"\n", "\t\x01\n", strings.Repeat("z", 600) + "\nexit", strings.Repeat("é", 100) + "\n",
	}
}

// FuzzRawTextFirstLine holds firstLine to the whole text on any text.
func FuzzRawTextFirstLine(f *testing.F) {
	for _, s := range firstLineSeeds() {
		f.Add(s)
	}
	f.Fuzz(checkFirstLine)
}

// checkFirstLine: when firstLine says ok, it is the text up to and
// through its first line break, and it says ok exactly when that break
// comes within the literal's first limit bytes; a decoded text says it
// whenever the text has a break.
func checkFirstLine(t *testing.T, text string) {
	lit, err := json.Marshal(text)
	require.NoError(t, err)
	var want string
	require.NoError(t, json.Unmarshal(lit, &want)) // what a dialect reads (invalid UTF-8 replaced)
	nl := strings.IndexByte(want, '\n')
	for _, limit := range []int{0, 1, 8, 9, 10, 64, 512, 1 << 20} {
		line, ok := rawText{lit: lit}.firstLine(limit)
		// The break's escape starts where the literal of the text
		// before it would close.
		in := false
		if nl >= 0 {
			before, err := json.Marshal(text[:strings.IndexByte(text, '\n')])
			require.NoError(t, err)
			in = len(before) <= limit // its \n ends within the first limit bytes after the quote
		}
		require.Equal(t, in, ok, "%q, limit %d", text, limit)
		if ok {
			require.Equal(t, want[:nl+1], line, "%q, limit %d", text, limit)
		}
	}
	line, ok := rawText{lit: lit, text: want, decoded: true}.firstLine(0)
	require.Equal(t, nl >= 0, ok)
	if ok {
		require.Equal(t, want[:nl+1], line)
	}
}

// anchoredPatterns are patterns whose first bytes are worked out in
// different ways: alternations, classes, optional groups, empty-width
// tests, runes past ASCII, case folding, and ones that can match the
// empty text or any byte.
var anchoredPatterns = []string{
	`^abc`, `^(?:ab|c)d`, `^[a-c]x`, `^a?b`, `^(?:x|y*)z`, `^\bword`, `^$`,
	`^.`, `^(?s).`, `^é`, `^[à-ü]+$`, `^[^a]`, `^(?i)k`, `^(?i)ab`, `^\d+\.`,
	`(?s)^(?:User refused|The user\b.*|\[Req)$`, `^(a*)*b`, `^(?:\(x\))?y`,
}

// anchoredAlphabet builds the texts the guarded regexps are checked on:
// every string of up to three of these pieces (ASCII letters of the
// patterns and others, a newline, a rune past ASCII, a byte that is not
// UTF-8, digits and punctuation).
var anchoredAlphabet = []string{"a", "b", "c", "x", "y", "z", "A", "K", "k", "\n", " ", "é", "\xff", "1", ".", "(", ")", "[", "U", "T"}

func anchoredTexts() []string {
	return piecedTexts(anchoredAlphabet, "", "User refused", "The user said no", "[Req", "word", "wordy", "(x)y", "12.", "aaab")
}

// piecedTexts returns texts followed by every string of one to three of
// pieces.
func piecedTexts(pieces []string, texts ...string) []string {
	level := []string{""}
	for range 3 {
		var next []string
		for _, t := range level {
			for _, p := range pieces {
				next = append(next, t+p)
			}
		}
		texts = append(texts, next...)
		level = next
	}
	return texts
}

// A guarded regexp answers exactly as the regexp does, on every text, for
// every pattern of the table and every one the dialects guard.
func TestAnchoredMatchesAsRegexp(t *testing.T) {
	patterns := append([]string{}, anchoredPatterns...)
	for _, a := range guardedByDialects {
		patterns = append(patterns, a.String())
	}
	texts := append(anchoredTexts(), dialectGuardSamples...)
	for _, p := range patterns {
		a, re := mustAnchored(p), regexp.MustCompile(p)
		for _, s := range texts {
			require.Equal(t, re.MatchString(s), a.MatchString(s), "MatchString %q on %q", p, s)
			require.Equal(t, re.FindStringSubmatch(s), a.FindStringSubmatch(s), "FindStringSubmatch %q on %q", p, s)
			require.Equal(t, re.FindSubmatch([]byte(s)), a.FindSubmatch([]byte(s)), "FindSubmatch %q on %q", p, s)
			require.Equal(t, re.FindStringIndex(s), a.FindStringIndex(s), "FindStringIndex %q on %q", p, s)
		}
	}
	// The dialects' own, with the first-line literal some of them add.
	for _, a := range guardedByDialects {
		for _, s := range texts {
			require.Equal(t, a.Regexp.MatchString(s), a.MatchString(s), "MatchString %q on %q", a, s)
			require.Equal(t, a.Regexp.FindStringIndex(s), a.FindStringIndex(s), "FindStringIndex %q on %q", a, s)
			require.Equal(t, a.Regexp.FindSubmatch([]byte(s)), a.FindSubmatch([]byte(s)), "FindSubmatch %q on %q", a, s)
		}
	}
}

// A first-line literal skips a text whose first line lacks it (it comes
// after the first break, or nowhere), and only such a text.
func TestAnchoredWithLine(t *testing.T) {
	a := mustAnchored(`^a[^\n]*word[^\n]*\n?`).withLine("word")
	for s, skip := range map[string]bool{
		"": false, "a": true, "a word": false, "aword\nx": false, "a\nword": true,
		"b word": true, "a wor\nd": true, "a x\ny word": true, "a x word\n": false,
	} {
		assert.Equal(t, skip, a.skips(s), "skips %q", s)
		assert.Equal(t, skip, a.skipsBytes([]byte(s)), "skipsBytes %q", s)
		if skip {
			assert.False(t, a.Regexp.MatchString(s), "%q is skipped but matches", s)
		}
		assert.Equal(t, a.Regexp.MatchString(s), a.MatchString(s), "MatchString %q", s)
	}
}

// The first bytes are bounded where they can be, so the guard skips
// texts; a pattern that can match the empty text or start with any byte
// always runs.
func TestAnchoredFirstBytes(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		first   string // the ASCII bytes a match can start with; "" unbounded
	}{
		{`^abc`, "a"},
		{`^(?:ab|c)d`, "ac"},
		{`^a?b`, "ab"},
		{`^(?:x|y*)z`, "xyz"},
		{`^\bword`, "w"},
		{`^\d+\.`, "0123456789"},
		{`^$`, ""},
		{`^.`, ""},
		{`^(?i)k`, ""},
	} {
		a := mustAnchored(tc.pattern)
		if tc.first == "" {
			assert.True(t, a.all, "%s: bounded", tc.pattern)
			continue
		}
		require.False(t, a.all, "%s: unbounded", tc.pattern)
		var got []byte
		for c := range 0x80 {
			if a.first[c] {
				got = append(got, byte(c))
			}
		}
		assert.Equal(t, tc.first, string(got), tc.pattern)
	}
	for _, a := range guardedByDialects {
		assert.False(t, a.all, "%s guards nothing", a)
	}
	assert.Panics(t, func() { mustAnchored(`abc`) }, "a pattern not anchored at the start")
	assert.Panics(t, func() { mustAnchored(`(?m)^abc`) }, "a pattern anchored at a line's start")
}

// guardedByDialects are the regexps the dialects match through anchored.
var guardedByDialects = []*anchored{
	claudeNoOutput, claudeUnfinished, claudeTermHeader,
	claudeTermBackground, claudeExitHeader, claudeBgStarted, opencodeTruncHeader,
}

// dialectGuardSamples are texts the guarded regexps match, and near
// misses of them.
var dialectGuardSamples = []string{
	"User refused permission to run tool", "User refused permission to run tool.",
	"The user doesn't want to proceed with this tool use. The tool use was rejected",
	"[Request interrupted by user for tool use]", "Tool cancelled by user.",
	"(Bash completed with no output)", "(Bash completed with no output) ",
	"Claude stopped this tool call before it ran.",
	"The turn was cancelled before this tool call returned a result.",
	"Exited with code 2.Final output:\n\nboom", "Killed. Signal `SIGKILL`. New output:\n\n",
	"Interrupted by the user. Final output:\n\nx", "Timed out. Exited with code 124.New output:\n\n",
	"Command started in background with id: b1", "Command started in background with id: ",
	"Exit code 1\nfailed", "Exit code -2", "Exit code", " Exit code 1",
	"Command running in background with ID: 7\nmore", "\nUser refused permission to run tool",
	"...output truncated...\n\nFull output saved to /tmp/x\n\nrest", "...truncated...\n\nrest", "..truncated...\n\n",
	"...\n\n1\n2\n", "...\ntruncated...\n\n", "... x truncated ...\n\n(no output)", "...truncated...",
	"...output truncated...\n\nFull output saved to: f\nUse Grep\n\ntail\n",
}

// foldedByDialects are the regexps the dialects match through folded.
var foldedByDialects = []*folded{opencodeTimeoutText, opencodeAbortText}

// A folded regexp answers exactly as the regexp does, on texts built of
// its literals in every case, their near misses, and the notes agents
// send.
func TestFoldedMatchesAsRegexp(t *testing.T) {
	pieces := []string{"ABORT", "aborted", "Abort", "abor", "cancel", "CANCELLED", "Canceled", "cance",
		"timed out", "TIMED OUT", "Timed  out", "exceeding the timeout", "Exceeded Timeout", "timeou",
		" ", "x", "\n", "é", "\xff", "K", "_"}
	texts := piecedTexts(pieces, "", "User aborted the command",
		"shell tool terminated command after exceeding timeout 2000 ms. If this command is expected to take longer, retry with a larger timeout value in milliseconds.")
	for _, f := range foldedByDialects {
		matched := 0
		for _, s := range texts {
			want := f.Regexp.MatchString(s)
			require.Equal(t, want, f.MatchString(s), "%s on %q", f, s)
			if want {
				matched++
			}
		}
		assert.Positive(t, matched, "%s matched none of the texts", f)
	}
}

// The literals' letters fold to ASCII alone: of the ASCII letters, only k
// and s are also matched by (?i) to runes past ASCII, which mustFolded
// refuses in a literal.
func TestFoldedLiteralsStayASCII(t *testing.T) {
	for c := 'a'; c <= 'z'; c++ {
		wide := false
		for r := unicode.SimpleFold(c); r != c; r = unicode.SimpleFold(r) {
			wide = wide || r >= 0x80
		}
		assert.Equal(t, c == 'k' || c == 's', wide, "%c", c)
	}
	for _, bad := range [][]string{{"Abort"}, {"kill"}, {"ss"}, {"é"}, {""}, {}} {
		assert.Panics(t, func() { mustFolded(`(?i)x`, bad...) }, "%q", bad)
	}
	assert.Panics(t, func() { mustFolded(`abort`, "abort") }, "a pattern without (?i)")
	assert.True(t, holdsFold("x ABorTed", "abort"))
	assert.False(t, holdsFold("abor", "abort"))
}
