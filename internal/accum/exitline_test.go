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
		text string
		head bool
		exit *int32
		want bool
	}{
		{"Exit code 3\na\nb", true, nil, true},
		{"exit status 3\na\nb", true, ptr(3), true}, // a header, reworded
		{"Exited with status 3\na\nb", true, ptr(3), true},
		{"[Command exited with status 3]\na\nb\n", true, nil, true},
		{"a\nb\n<shellId: 1 completed with exit status 3>", true, ptr(3), true},
		{"to-stdout\n[Process exited with status 0]\n", true, ptr(0), true},
		{"a\nb\n\nCommand exited with status 3", true, nil, true},
		{"a\nb\nExit Code: 3", true, ptr(3), true},
		{"a\nb\n[exit: 3]", true, ptr(3), true},
		{"a\nb\n<shellId: 1 completed with [exit: 3]>", true, ptr(3), true},
		{"Return code: 2\nls: cannot access", true, ptr(2), true},
		{"a\n(exit code 3)\n", true, ptr(3), true},
		// One word, an identifier or a short name: a build that rewords
		// its line so loses the exit just the same.
		{"ExitCode: 3\na\nb", true, nil, true},
		{"a\nb\n[Command ExitCode: 3]", true, ptr(3), true},
		{"a\nb\nexit_code=3", true, nil, true},
		{"a\nb\nexitCode: 3", true, ptr(3), true},
		{"a\nb\nexit-status 3", true, nil, true},
		{"a\nb\nCommand rc=3", true, nil, true},
		{"rc: 3\na", true, nil, true},
		{"a\nb\nsrc 3", true, nil, false},
		{"a\nb\nrc 3", true, nil, false},
		{"a\nb\nexit status 3", true, nil, true}, // no exit: the line may have held it
		{"exit status 3", true, nil, true},
		{long + "Exit code 2", false, ptr(2), true},
		// Go's os/exec: go run, go test print it last, and it is the
		// program's exit.
		{"panic: boom\n\ngoroutine 1 [running]:\nexit status 2\n", true, ptr(2), false},
		{"exit status 1", true, ptr(1), false},
		{"FAIL\nexit status 1\nFAIL\texample.com/x\t0.004s\n", true, nil, false},
		// A head that was dropped has no first line.
		{"Exit code 3\n" + long, false, nil, false},
		{"Exit code 3 and more\na", true, nil, false},
		{"the exit code is 3\n", true, nil, false},
		{"a\nexit status unknown", true, nil, false},
		{"a\nb\nc", true, nil, false},
		{"", true, nil, false},
		{"a\n" + strings.Repeat("x", 100) + " exit code 3", true, nil, false},
		// A line naming another code than the call's is the command's
		// own output: an agent restates the code it reports (real
		// outputs of probe M's tricky scenario).
		{"Exit code 3\nreal\n", true, ptr(0), false},
		{"out\nCommand exited with code 0\n", true, ptr(5), false},
		{"done\n[Process exited with code 7]\nexit status 7\n\nCommand exited with code 7\n", true, ptr(0), false},
		{"a\nb\nExit Code: 3", true, ptr(-1), false},
	} {
		assert.Equal(t, c.want, ExitLineIn([]byte(c.text), c.head, c.exit), "%.60q head=%v exit=%v", c.text, c.head, c.exit)
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
