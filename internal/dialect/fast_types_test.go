package dialect

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/internal/jsonlit"
	"github.com/stretchr/testify/require"
)

// fastMustRead says whether the fast decoder must read a frame that
// holds b as one member's value: when b is one valid JSON value nested
// less deep than the decoder reads. A b that is not one value but valid
// in its slot closes the slot and adds members of its own, which may
// repeat a field's (or fold to its name): the decoder leaves those to
// encoding/json, as FastDecode says.
func fastMustRead(b []byte) bool {
	return json.Valid(b) && strings.Count(string(b), "[")+strings.Count(string(b), "{") < 60
}

// checkFastValue holds the fast decoder's reading of the value b into a
// field of type T (its UnmarshalJSONFast, in the decoder's pass) to
// encoding/json's (its UnmarshalJSON, given the raw value), the field
// between two others: the fast decoder must say no where b is no valid
// JSON, and yes where it is (unless it nests deeper than it reads). It
// says whether the fast decoder read b.
func checkFastValue[T any](t *testing.T, b []byte) bool {
	t.Helper()
	type holder struct {
		Before string `json:"before"`
		V      T      `json:"v"`
		After  string `json:"after"`
	}
	msg := []byte(`{"before":"b","v":` + string(b) + `,"after":"a"}`)
	var fast, slow holder
	ok := jsonlit.FastDecode(msg, &fast, nil)
	if err := json.Unmarshal(msg, &slow); err != nil {
		require.False(t, ok, "%s: not valid JSON, and the fast decoder said yes", msg)
		return false
	}
	if !ok && fastMustRead(b) {
		require.Fail(t, "the fast decoder said no", "%s", msg)
	}
	if ok {
		require.Equal(t, slow, fast, "%s", msg)
	}
	return ok
}

// commandLineSeeds are command values of every shape.
var commandLineSeeds = []string{
	`"npm test"`, `""`, `"sh -c 'echo hi'"`, `"a\nb \u00e9 \ud800 \"q\" \\"`, "\"bad \xff utf8\"",
	`"a command of more than twenty-four bytes"`,
	`[]`, ` [ ] `, `["ls"]`, `["bash","-lc","npm test"]`, `[ "ls" , "-la" ]`, `["", "a b", "it's"]`,
	`["ls",3]`, `[3,"ls"]`, `["ls",null]`, `[null]`, `["ls",["x"]]`, `["ls",{"a":"b"}]`, `["a\u0000b","\ud83d\ude00"]`,
	`42`, `-1.5e3`, `true`, `false`, `null`, `{"x":1}`, `{}`,
	`["ls",]`, `["ls"`, `["ls" "x"]`, `"\q"`, `["\q"]`, `[,]`, `"unterminated`, "\"a\x01\"", "[\"a\x01\"]",
}

func TestCommandLineFastIsUnmarshalJSON(t *testing.T) {
	fast := 0
	for _, s := range commandLineSeeds {
		if checkFastValue[CommandLine](t, []byte(s)) {
			fast++
		}
	}
	require.Greater(t, fast, 20)
}

func FuzzCommandLine(f *testing.F) {
	for _, s := range commandLineSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkFastValue[CommandLine](t, b)
	})
}

// rawBytesSeeds are output values of every shape.
var rawBytesSeeds = []string{
	`[]`, ` [ ] `, `[0]`, `[104,105]`, "[ 255 , 0\n,\t10\r]", `[256]`, `[01]`, `[1.0]`, `[10.000,2]`, `[1e2]`, `[-1]`, `[1.5]`,
	`[1,"a"]`, `[[1]]`, `[null]`, `["a"]`, `[12345]`, `[0255]`,
	`"hi"`, `""`, `"a\nb \u00e9 \ud800"`, "\"bad \xff\"", `"a string of more than twenty-four bytes"`,
	`null`, `7`, `true`, `{"a":[1]}`, `{}`,
	`[1,]`, `[1 2]`, `[1`, `[,]`, `"\q"`, `[1.]`, `[1e]`, "\"a\x01\"",
}

func TestRawBytesFastIsUnmarshalJSON(t *testing.T) {
	fast := 0
	for _, s := range rawBytesSeeds {
		if checkFastValue[rawBytes](t, []byte(s)) {
			fast++
		}
	}
	require.Greater(t, fast, 20)
}

func FuzzRawBytesFast(f *testing.F) {
	for _, s := range rawBytesSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkFastValue[rawBytes](t, b)
	})
}
