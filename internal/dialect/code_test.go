package dialect

import (
	"testing"

	"github.com/acpnorm/acpnorm/internal/accum"
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

// A code padded with white space other than ASCII's (U+00A0, U+3000,
// U+0085) is not a number an agent wrote: it reads as unknown wherever an
// exit code is read, structured or in text, never as the code it holds.
func TestExitCodePaddedWithOtherSpaceIsUnknown(t *testing.T) {
	for _, pad := range []string{"\u00a0", "\u3000", "\u0085", "\u2028"} {
		for _, lit := range []string{`"` + pad + `0"`, `"0` + pad + `"`, `"` + pad + `3"`} {
			c := ParseCode([]byte(lit))
			assert.False(t, c.Known, "ParseCode(%q) known as %d", lit, c.Value)
		}
		for name, read := range map[string]func(o *accum.Observation){
			"gemini exited": func(o *accum.Observation) { geminiFinal(o, "Command exited with code: 0"+pad) },
			"gemini debug": func(o *accum.Observation) {
				geminiDebugResult(o, "Command: x\nDirectory: (root)\nOutput: a\nError: (none)\nExit Code: "+pad+"0\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 1")
			},
			"qwen report": func(o *accum.Observation) {
				qwenReport(o, "Command: x\nDirectory: (root)\nOutput: a\nError: (none)\nExit Code: "+pad+"0\nSignal: (none)\nProcess Group PGID: 1")
			},
			"docker report": func(o *accum.Observation) {
				dockerResult(o, "Error executing command: exit status 0"+pad+"\nOutput: a")
			},
			"grok exit line": func(o *accum.Observation) { p, tr := "exit: "+pad+"0\na\n", false; grokExitLineIn(o, &p, &tr) },
			"auggie tag": func(o *accum.Observation) {
				if r, ok := parseAuggieResult("<return-code>\n" + pad + "0\n</return-code>\n<output>\na\n</output>"); ok && r.exit.Known {
					o.Exit = r.exit.Exit(accum.ExitText, true)
				}
			},
		} {
			var o accum.Observation
			read(&o)
			assert.Nil(t, o.Exit, "%s padded with %q: exit %+v", name, pad, o.Exit)
		}
	}
	// ASCII white space around a code is a code.
	for _, lit := range []string{`" 3"`, `"3 "`, `"\t3\n"`} {
		assert.True(t, ParseCode([]byte(lit)).Known, "%s", lit)
	}
}
