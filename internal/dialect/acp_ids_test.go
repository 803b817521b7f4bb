package dialect

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadRefusesUnsoundIDs holds every dialect to refusing an id that is
// not valid Unicode: "a\ud800" and "a\udfff" (or a raw invalid byte)
// decode alike, so two calls would be read as one. An id that holds
// U+FFFD itself, or a surrogate pair, is read as sent.
func TestReadRefusesUnsoundIDs(t *testing.T) {
	update := func(id string) string {
		return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"` + id + `","title":"ls","kind":"execute","status":"in_progress","rawInput":{"command":"ls"}}}}`
	}
	for _, tc := range []struct {
		name, msg string
		id        string // the id read, when the frame is sound
		shown     string // how the error shows the id, when it is not
	}{
		{name: "lone high surrogate", msg: update(`a\ud800`), shown: `"a\ud800"`},
		{name: "lone low surrogate", msg: update(`a\udfff`), shown: `"a\udfff"`},
		{name: "surrogates reversed", msg: update(`a\udc00\ud800`), shown: `"a\udc00\ud800"`},
		{name: "invalid byte", msg: update("b\xff"), shown: `"b\xff"`},
		{name: "ask", msg: `{"jsonrpc":"2.0","id":4,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"c\ud801","title":"rm -rf x"},"options":[{"optionId":"no","kind":"reject_once"}]}}`, shown: `"c\ud801"`},
		{name: "terminal request", msg: `{"jsonrpc":"2.0","id":5,"method":"terminal/output","params":{"sessionId":"s","terminalId":"t\udbff"}}`, shown: `"t\udbff"`},
		{name: "escaped U+FFFD", msg: update(`a\ufffd`), id: "a\uFFFD"},
		{name: "U+FFFD as UTF-8", msg: update("a\uFFFD"), id: "a\uFFFD"},
		{name: "surrogate pair", msg: update(`a\ud83d\ude00`), id: "a\U0001F600"},
		{name: "U+FFFD and a backslash", msg: update(`a\ufffd\\ud800`), id: "a\uFFFD\\ud800"},
	} {
		for _, d := range All() {
			t.Run(tc.name+"/"+d.Info().Name, func(t *testing.T) {
				f, err := Read(d, []byte(tc.msg))
				if tc.shown != "" {
					require.ErrorIs(t, err, ErrBadFrame)
					assert.Contains(t, err.Error(), "the id "+tc.shown+" is not valid Unicode")
					return
				}
				require.NoError(t, err)
				require.NotEmpty(t, f.Observations)
				assert.Equal(t, tc.id, f.Observations[0].ToolCallID)
			})
		}
	}
}

// TestReadUnsoundIDsOnlyWhereTheyAre: a frame whose id is sound reads,
// whatever invalid UTF-8 the rest of it holds (output can).
func TestReadUnsoundIDsOnlyWhereTheyAre(t *testing.T) {
	msg := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"a\ufffd","status":"completed","content":[{"type":"content","content":{"type":"text","text":"out\ud800put ` + "\xff" + `"}}],"rawOutput":{"exit_code":0}}}}`
	for _, d := range All() {
		f, err := Read(d, []byte(msg))
		require.NoError(t, err, d.Info().Name)
		require.NotEmpty(t, f.Observations, d.Info().Name)
		assert.Equal(t, "a\uFFFD", f.Observations[0].ToolCallID, d.Info().Name)
		assert.False(t, strings.Contains(f.Observations[0].ToolCallID, `\`), d.Info().Name)
	}
}

// TestReadSaysAToolCallIDOfAnotherType: an update whose toolCallId is not
// a string is refused naming the JSON type it came with, not as though the
// member were missing; one that is missing (or null) is said so.
func TestReadSaysAToolCallIDOfAnotherType(t *testing.T) {
	update := func(id string) string {
		return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update",` + id + `"status":"completed","rawOutput":{"exit_code":0}}}}`
	}
	for _, tc := range []struct {
		name, msg, says string
	}{
		{"a number", update(`"toolCallId":17,`), "toolCallId is a JSON number, not a string"},
		{"a boolean", update(`"toolCallId":true,`), "toolCallId is a JSON boolean, not a string"},
		{"an object", update(`"toolCallId":{"id":"c1"},`), "toolCallId is a JSON object, not a string"},
		{"an array", update(`"toolCallId":["c1"],`), "toolCallId is a JSON array, not a string"},
		{"null", update(`"toolCallId":null,`), "without toolCallId"},
		{"missing", update(``), "without toolCallId"},
	} {
		for _, d := range All() {
			t.Run(tc.name+"/"+d.Info().Name, func(t *testing.T) {
				_, err := Read(d, []byte(tc.msg))
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.says)
			})
		}
	}
}
