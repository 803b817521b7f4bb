package accum

import (
	"strings"
	"testing"
)

// echoStrippedTests are outputs that may start with an echo of the
// command, and what remains of them (also replayed by the state tests).
var echoStrippedTests = []struct {
	name    string
	command string
	cwd     string
	texts   []Text
	want    string
}{
	{"verbatim echo, one delta", "ls -la", "/w", []Text{delta("$ ls -la\ntotal 0\n")}, "total 0\n"},
	{"echo split across deltas", "ls -la", "/w", []Text{delta("$"), delta(" ls"), delta(" -l"), delta("a\n"), delta("total 0\n")}, "total 0\n"},
	{"echo with CRLF", "ls", "/w", []Text{delta("$ ls\r\na.txt\r\n")}, "a.txt\r\n"},
	{"CRLF split between CR and LF", "ls", "/w", []Text{delta("$ ls\r"), delta("\na.txt\n")}, "a.txt\n"},
	{"file arguments resolved against cwd", "cat notes.txt src/a.go", "/w/p", []Text{delta("$ cat /w/p/notes.txt /w/p/src/a.go\nhello\n")}, "hello\n"},
	{"some file arguments resolved", "wc -l a.txt b.txt", "/w", []Text{delta("$ wc -l /w/a.txt b.txt\n3 total\n")}, "3 total\n"},
	{"multi-line command: every line echoed", "cd sub\nls", "/w", []Text{delta("$ cd sub\n$ ls\nx\n")}, "x\n"},
	{"multi-line command split", "cd sub\nls", "/w", []Text{delta("$ cd sub\n"), delta("$ l"), delta("s\nx\n")}, "x\n"},
	{"stripped once only", "ls", "/w", []Text{delta("$ ls\n$ ls\nx\n")}, "$ ls\nx\n"},
	{"snapshots restate the echo each time", "make", "/w", []Text{snap("$ make\n"), snap("$ make\ncc a.c\n"), snap("$ make\ncc a.c\ncc b.c\n")}, "cc a.c\ncc b.c\n"},
	{"partial snapshot held, then whole", "make", "/w", []Text{snap("$ ma"), snap("$ make\nok\n")}, "ok\n"},
	{"final starts with the echo", "make", "/w", []Text{delta("$ make\nok\n"), final("$ make\nok\ndone\n")}, "ok\ndone\n"},
	{"final without the echo replaces", "make", "/w", []Text{delta("$ make\nok\n"), final("ok\ndone\n")}, "ok\ndone\n"},
	{"a line that merely starts with $ stays", "ls", "/w", []Text{delta("$ 5 is the price\n")}, "$ 5 is the price\n"},
	{"an echo of another command stays", "ls", "/w", []Text{delta("$ ls -la\nx\n")}, "$ ls -la\nx\n"},
	{"echo followed directly by output, one delta", "echo hi", "/w", []Text{delta("$ echo hihi\n")}, "hi\n"},
	{"echo followed directly by output, in the next delta", "echo hi", "/w", []Text{delta("$ echo hi"), delta("hi\n")}, "hi\n"},
	{"echo followed directly by output, split inside the echo", "ls", "/w", []Text{delta("$ l"), delta("salpha.txt\nbeta.md\n")}, "alpha.txt\nbeta.md\n"},
	{"echo followed directly by output, snapshots", "ls", "/w", []Text{snap("$ ls"), snap("$ lsalpha.txt\n"), snap("$ lsalpha.txt\nbeta.md\n")}, "alpha.txt\nbeta.md\n"},
	{"echo followed directly by output, final", "ls", "/w", []Text{final("$ lsalpha.txt\n")}, "alpha.txt\n"},
	{"echo followed directly by a CR", "ls", "/w", []Text{delta("$ ls\rx\n")}, "\rx\n"},
	{"multi-line command followed directly by output", "cd sub\nls", "/w", []Text{delta("$ cd sub\n$ lsx\n")}, "x\n"},
	{"a multi-line command's first line followed by text is not its echo", "cd sub\nls", "/w", []Text{delta("$ cd subx\n$ ls\n")}, "$ cd subx\n$ ls\n"},
	{"a longer command line (a space after the command) stays", "ls", "/w", []Text{delta("$ ls --color\nx\n")}, "$ ls --color\nx\n"},
	{"a line that merely starts with $ and the command's first letters stays", "ls -la", "/w", []Text{delta("$ ls -lh\nx\n")}, "$ ls -lh\nx\n"},
	{"echo not at the very start stays", "ls", "/w", []Text{delta("x\n$ ls\n")}, "x\n$ ls\n"},
	{"held text that never became the echo is released", "ls -la", "/w", []Text{delta("$ ls")}, "$ ls"},
	{"output that is only the echo", "true", "/w", []Text{delta("$ true\n")}, ""},
	{"no command known: nothing stripped", "", "/w", []Text{delta("$ ls\nx\n")}, "$ ls\nx\n"},
	{"byte deltas with a split rune after the echo", "echo é", "/w", []Text{{Kind: Delta, Bytes: []byte("$ echo é\n\xc3")}, {Kind: Delta, Bytes: []byte("\xa9\n")}}, "é\n"},
}

// TestEchoStripped: an exact echo of the call's own command as "$ cmd" at
// the very start of its output is not output; it is stripped once, also
// when it arrives split across live updates, and nothing else is lost.
func TestEchoStripped(t *testing.T) {
	for _, tt := range echoStrippedTests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCall("c1", 1<<16)
			c.Apply(&Observation{Shell: ShellYes, Command: tt.command, Cwd: tt.cwd, Status: StatusRunning})
			var live strings.Builder
			for _, x := range tt.texts {
				c.Apply(&Observation{Texts: []Text{x}})
				if r, ok := c.Revision(); ok {
					if ch := r.Texts[Combined]; ch != nil {
						if ch.Replace {
							live.Reset()
						}
						live.WriteString(ch.Text)
					}
				}
				// What a client holds is never more than the text so far
				// with the echo removed: held-back text is not shown early.
				if strings.HasPrefix(live.String(), "$ "+tt.command) && tt.command != "" && !strings.HasPrefix(tt.want, "$ "+tt.command) {
					t.Fatalf("the echo reached the client: %q", live.String())
				}
			}
			c.Apply(&Observation{Status: StatusCompleted, Exit: &Exit{Code: 0, Source: ExitTerminal}})
			r, _ := c.Revision()
			got := ""
			if ch := r.Texts[Combined]; ch != nil {
				got = ch.Text
			}
			if got != tt.want {
				t.Fatalf("output %q, want %q", got, tt.want)
			}
		})
	}
}

// TestEchoHeldAfterEnd: text held back as a possible echo on a call that
// already ended is released at once, never kept out of the output.
func TestEchoHeldAfterEnd(t *testing.T) {
	c := NewCall("c1", 1024)
	c.Apply(&Observation{Shell: ShellYes, Command: "ls -la", Status: StatusCompleted, Exit: &Exit{Code: 0, Source: ExitTerminal}})
	c.Revision()
	c.Apply(&Observation{Texts: []Text{{Kind: Delta, Text: "$ ls"}}})
	r, ok := c.Revision()
	if !ok || r.Texts[Combined] == nil || r.Texts[Combined].Text != "$ ls" {
		t.Fatalf("late text held back: %+v ok=%v", r.Texts[Combined], ok)
	}
}

// TestEchoHeldSnapshotThenDelta: a held partial snapshot followed by a
// delta loses nothing.
func TestEchoHeldSnapshotThenDelta(t *testing.T) {
	for _, tc := range []struct{ second, want string }{{"ke\nok\n", "ok\n"}, {"x\n", "$ max\n"}} {
		c := NewCall("c1", 1024)
		c.Apply(&Observation{Shell: ShellYes, Command: "make", Status: StatusRunning, Texts: []Text{{Kind: Snapshot, Text: "$ ma"}}})
		c.Apply(&Observation{Texts: []Text{{Kind: Delta, Text: tc.second}}})
		c.Apply(&Observation{Status: StatusCompleted})
		r, _ := c.Revision()
		if r.Texts[Combined] == nil || r.Texts[Combined].Text != tc.want {
			t.Errorf("then %q: output %+v, want %q", tc.second, r.Texts[Combined], tc.want)
		}
	}
}

// FuzzEcho: byte deltas, cut anywhere (even inside a rune), of an output that may start with
// an echo of the command. The output is the whole text with exactly that
// one echo removed when it is one, and the whole text otherwise: nothing
// else is ever lost, and no live revision shows the echo.
func FuzzEcho(f *testing.F) {
	f.Add("ls -la", "$ ls -la\nx\n", []byte{3, 5, 1})
	f.Add("cd a\nls", "$ cd a\r\n$ ls\r\ny", []byte{1, 1, 2, 9})
	f.Add("cat f", "$ cat /w/f\nz", []byte{4})
	f.Add("ls", "$ lsx\n", []byte{2})
	f.Fuzz(func(t *testing.T, cmd, out string, cuts []byte) {
		if len(cmd) > 512 || len(out) > 4096 || len(cuts) > 1024 {
			t.Skip("bounded so that every input runs in well under a second")
		}
		c := NewCall("c1", 1<<20)
		c.Apply(&Observation{Shell: ShellYes, Command: cmd, Cwd: "/w", Status: StatusRunning})
		var live strings.Builder
		rest := out
		for _, n := range cuts {
			if rest == "" {
				break
			}
			k := min(int(n)%8+1, len(rest))
			c.Apply(&Observation{Texts: []Text{{Kind: Delta, Bytes: []byte(rest[:k])}}})
			rest = rest[k:]
			if r, ok := c.Revision(); ok && r.Texts[Combined] != nil {
				live.WriteString(r.Texts[Combined].Text)
			}
		}
		if rest != "" {
			c.Apply(&Observation{Texts: []Text{{Kind: Delta, Bytes: []byte(rest)}}})
		}
		c.Apply(&Observation{Status: StatusCompleted})
		r, _ := c.Revision()
		got := ""
		if r.Texts[Combined] != nil {
			got = r.Texts[Combined].Text
		}
		want := validString(out)
		if m, n := matchEcho(out, cmd, "/w", true); m == echoFull {
			want = validString(out[n:])
		}
		if got != want {
			t.Fatalf("command %q, output %q: got %q, want %q", cmd, out, got, want)
		}
		if !strings.HasPrefix(want, live.String()) && !strings.HasPrefix(validString(out), live.String()) {
			t.Fatalf("live text %q is neither a start of %q nor of the output", live.String(), want)
		}
	})
}

// matchEcho reports whether s starts with an echo of cmd, and its length.
// atEnd says s is all the output there will be: an echo may then end
// without a line terminator.
func matchEcho(s, cmd, cwd string, atEnd bool) (echoMatch, int) {
	return newEchoPattern(cmd, cwd).match(s, atEnd)
}

// TestEchoCutKeepsValidOnlyOnARuneBoundary: a text its producer marked
// valid UTF-8 stays marked after the echo is cut off only when the cut
// falls between runes; cut inside one, what is left starts with a
// continuation byte and must be checked (made U+FFFD) again.
func TestEchoCutKeepsValidOnlyOnARuneBoundary(t *testing.T) {
	const s = "h\u00e9llo" // é is bytes 1 and 2
	for _, tc := range []struct {
		n     int
		valid bool
	}{{0, true}, {1, true}, {2, false}, {3, true}, {len(s), true}} {
		got := cut(Text{Text: s, Valid: true}, tc.n)
		if got.Valid != tc.valid || got.Text != s[tc.n:] {
			t.Errorf("cut at %d: %q valid %v, want %q valid %v", tc.n, got.Text, got.Valid, s[tc.n:], tc.valid)
		}
		if got := cut(Text{Text: s}, tc.n); got.Valid {
			t.Errorf("cut at %d of an unchecked text says it is valid", tc.n)
		}
	}
}

// TestEchoNotFromAnAgentThatNeverEchoes: a text of an agent that never
// writes the command before its output (Observation.NoEcho) is output
// from its first byte, even when the command itself prints "$ <command>"
// first, and it is not held back; the same text from an agent that may
// echo is the echo.
func TestEchoNotFromAnAgentThatNeverEchoes(t *testing.T) {
	const cmd = `echo '$ echo hi'; echo hi`
	for _, tc := range []struct {
		noEcho   bool
		want     string
		firstRev string // what the client holds after the first text
	}{{true, "$ " + cmd + "\nhi\n", "$ " + cmd + "\n"}, {false, "hi\n", ""}} {
		c := NewCall("c1", 1024)
		var live strings.Builder
		fold := func() {
			if r, ok := c.Revision(); ok {
				if ch := r.Texts[Combined]; ch != nil {
					if ch.Replace {
						live.Reset()
					}
					live.WriteString(ch.Text)
				}
			}
		}
		c.Apply(&Observation{Shell: ShellYes, Command: cmd, Status: StatusRunning, NoEcho: tc.noEcho})
		fold()
		c.Apply(&Observation{Texts: []Text{{Kind: Delta, Text: "$ " + cmd + "\n"}}, NoEcho: tc.noEcho})
		fold()
		if live.String() != tc.firstRev {
			t.Errorf("NoEcho %v: after the first line the client holds %q, want %q", tc.noEcho, live.String(), tc.firstRev)
		}
		c.Apply(&Observation{Texts: []Text{{Kind: Delta, Text: "hi\n"}}, Status: StatusCompleted, Exit: &Exit{Code: 0, Source: ExitTerminal}, NoEcho: tc.noEcho})
		fold()
		if live.String() != tc.want {
			t.Errorf("NoEcho %v: output %q, want %q", tc.noEcho, live.String(), tc.want)
		}
	}
}
