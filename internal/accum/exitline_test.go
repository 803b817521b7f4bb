package accum

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The exit lines of the agents' tools, and reworded ones, are found at
// either end of a text; a command's own lines, and Go's "exit status N"
// where a Go program prints it, are not.
func TestExitLineIn(t *testing.T) {
	long := strings.Repeat("an output line\n", 1000)
	for _, c := range []struct {
		text      string
		head      bool
		exitKnown bool
		want      bool
	}{
		{"Exit code 3\na\nb", true, false, true},
		{"exit status 3\na\nb", true, true, true}, // a header, reworded
		{"Exited with status 3\na\nb", true, true, true},
		{"[Command exited with status 3]\na\nb\n", true, false, true},
		{"a\nb\n<shellId: 1 completed with exit status 3>", true, true, true},
		{"to-stdout\n[Process exited with status 0]\n", true, true, true},
		{"a\nb\n\nCommand exited with status 3", true, false, true},
		{"a\nb\nExit Code: 3", true, true, true},
		{"a\nb\n[exit: 3]", true, true, true},
		{"a\nb\n<shellId: 1 completed with [exit: 3]>", true, true, true},
		{"Return code: 2\nls: cannot access", true, true, true},
		{"a\n(exit code 3)\n", true, true, true},
		{"a\nb\nexit status 3", true, false, true}, // no exit: the line may have held it
		{"exit status 3", true, false, true},
		{long + "Exit code 2", false, true, true},
		// Go's os/exec: go run, go test print it last, and it is the
		// program's exit.
		{"panic: boom\n\ngoroutine 1 [running]:\nexit status 2\n", true, true, false},
		{"exit status 1", true, true, false},
		{"FAIL\nexit status 1\nFAIL\texample.com/x\t0.004s\n", true, false, false},
		// A head that was dropped has no first line.
		{"Exit code 3\n" + long, false, false, false},
		{"Exit code 3 and more\na", true, false, false},
		{"the exit code is 3\n", true, false, false},
		{"a\nexit status unknown", true, false, false},
		{"a\nb\nc", true, false, false},
		{"", true, false, false},
		{"a\n" + strings.Repeat("x", 100) + " exit code 3", true, false, false},
	} {
		assert.Equal(t, c.want, ExitLineIn([]byte(c.text), c.head, c.exitKnown), "%.60q head=%v known=%v", c.text, c.head, c.exitKnown)
	}
}

// A call that ended holding an exit line at either end of a text says so;
// one whose head was cut off looks at its last line only.
func TestCallExitLineHeld(t *testing.T) {
	c := NewCall("c", 1<<10)
	c.Apply(&Observation{Shell: ShellYes, Texts: []Text{{Stream: Combined, Kind: Delta, Text: "exit status 3\na\nb"}}})
	c.Apply(&Observation{Status: StatusFailed, Exit: exit(3, ExitTerminal)})
	assert.True(t, c.ExitLineHeld())

	c = NewCall("c", 1<<10)
	c.Apply(&Observation{Shell: ShellYes, Status: StatusCompleted, Exit: exit(0, ExitTerminal), Texts: []Text{{Stream: Stdout, Kind: Final, Text: "a\nb\n"}}})
	assert.False(t, c.ExitLineHeld())

	c = NewCall("c", 16)
	c.Apply(&Observation{Shell: ShellYes, Status: StatusCompleted, Texts: []Text{{Stream: Combined, Kind: Final, Text: "Exit code 3\n" + strings.Repeat("x\n", 20)}}})
	assert.False(t, c.ExitLineHeld(), "the first line held is not the text's")
}
