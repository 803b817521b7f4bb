package dialect

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// An exit code is known only when the agent wrote an integer: a number
// whose decimal value is whole and fits an int32, bare or in a string.
// Anything else is unknown, never 0, and in particular never a value that
// only rounding to a float made whole.
func TestParseCode(t *testing.T) {
	known := map[string]int32{
		`3`: 3, `-1`: -1, `0`: 0, `"3"`: 3, `" 3 "`: 3, `"+3"`: 3,
		`3.0`: 3, `1e2`: 100, `1E+2`: 100, `0.0`: 0, `-0`: 0, `0e5`: 0, `0e-400`: 0,
		`300e-2`: 3, `0.03e2`: 3, `2147483647`: 2147483647, `-2147483648`: -2147483648,
		`2147483647.000`: 2147483647, `21474836470e-1`: 2147483647, `"1e2"`: 100, `0000000000000000000000000003`: 3,
		`1e0000002`: 100, `0.5e1`: 5, `1e-0`: 1,
	}
	for lit, want := range known {
		c := ParseCode([]byte(lit))
		assert.True(t, c.Known, "%s: unknown, want %d", lit, want)
		assert.Equal(t, want, c.Value, "%s", lit)
	}
	for _, lit := range []string{
		// Not whole, however close to a whole number a float would make it.
		`1e-400`, `-1e-400`, `"1e-400"`, `5e-324`, `3.5`, `3.0000000000000000001`, `2.9999999999999999999`,
		`1e-7`, `0.0000000001`, `30e-1e`, `5e-1`, `1e-0000001`,
		// Past an int32.
		`2147483648`, `-2147483649`, `1e10`, `1e400`, `21474836480e-1`, `1e99999999999999999999`,
		// Not a decimal number at all.
		`"0x3"`, `"0x1p3"`, `"1_0"`, `"Inf"`, `"-Infinity"`, `"NaN"`, `"3abc"`, `"-"`, `""`, `"."`, `".5"`, `"3."`, `"3e"`, `"e3"`, `"--3"`,
		`true`, `null`, `{}`, `[3]`, ``,
	} {
		c := ParseCode([]byte(lit))
		assert.False(t, c.Known, "%s: known as %d, want unknown", lit, c.Value)
	}
}
