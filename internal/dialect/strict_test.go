package dialect

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadStrictLayer holds the JSON-RPC layer (and ACP's own layer of the
// methods read) to strict types while vendor fields stay lenient; an error
// names the member by its path and JSON's types, never a Go type.
func TestReadStrictLayer(t *testing.T) {
	for _, tc := range []struct{ msg, err string }{
		{`{"jsonrpc":2,"method":"session/update","params":{"update":{"content":{}}}}`, "bad frame: the JSON-RPC layer: jsonrpc is a JSON number, not a string"},
		{`{"method":"session/update","method":5,"params":{}}`, "bad frame: the JSON-RPC layer: method is a JSON number, not a string"},
		{`{"method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}`, ""},
		{`{"method":"session/update","params":{"update":{"sessionUpdate":"tool_call","toolCallId":"x","content":{}}},"result":{"agentInfo":5}}`, ""},
		{`{"id":1,"result":{"agentInfo":{"name":7}}}`, "bad frame: response: result.agentInfo.name is a JSON number, not a string"},
		{`{"id":1,"result":[1]}`, ""},
		{`{"id":1,"result":{"stopReason":"end_turn","x":{"y":[}}}`, "bad frame: not a JSON object: invalid character '}' looking for beginning of value"},
		{`{"id":1,"method":"session/request_permission","params":{"toolCall":{"toolCallId":5}}}`, "bad frame: session/request_permission: params.toolCall.toolCallId is a JSON number, not a string"},
		{`{"id":1,"method":"session/request_permission","params":{"toolCall":{"toolCallId":"a","title":5},"options":[{"optionId":"r","kind":"reject_once"}]}}`, ""},
		{`{"id":1,"method":"session/request_permission","params":{"options":{}}}`, "bad frame: session/request_permission: params.options is a JSON object, not an array"},
		{`{"id":1,"method":"session/new","params":{"cwd":5}}`, "bad frame: session/new: params.cwd is a JSON number, not a string"},
		{`{"id":1,"method":"session/new","params":[]}`, "bad frame: session/new: params is a JSON array, not an object"},
		{`{"id":1,"method":"session/load","params":{"sessionId":"s","cwd":["/x"]}}`, "bad frame: session/load: params.cwd is a JSON array, not a string"},
		{`{"id":1,"method":"session/update","params":5}`, "bad frame: session/update: params is a JSON number, not an object"},
		{`{"method":"session/update","params":[1,2]}`, "bad frame: session/update: params is a JSON array, not an object"},
		{`{"method":"session/update","params":{"sessionId":"s","update":[1]}}`, "bad frame: session/update: params.update is a JSON array, not an object"},
		{`{"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":5,"toolCallId":"x"}}}`, "bad frame: session/update: params.update.sessionUpdate is a JSON number, not a string"},
		{`{"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"x","title":5,"rawOutput":{"exit_code":{}}}}}`, ""},
		{`{"method":"session/update","params":null}`, "bad frame: session/update without params"},
		{`[]`, "bad frame: not a JSON object: the message is a JSON array"},
		{`true`, "bad frame: not a JSON object: the message is a JSON boolean"},
		{`null`, "bad frame: neither a request, a notification nor a response (no method and no id)"},
		{`{"id":null}`, ""},
		{`{"jsonrpc":"1.0","method":"session/update","params":{"update":{"sessionUpdate":"plan"}}}`, `bad frame: the JSON-RPC layer: jsonrpc is "1.0", not "2.0"`},
		{`{"jsonrpc":"2.0 ","id":3,"result":{}}`, `bad frame: the JSON-RPC layer: jsonrpc is "2.0 ", not "2.0"`},
		{`{"jsonrpc":null,"id":3,"result":{}}`, ""},
		{`{"jsonrpc":"2.0","method":"session/update","params":{}}`, "bad frame: session/update without params.update"},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":null}}`, "bad frame: session/update without params.update"},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{}}}`, "bad frame: session/update: params.update without sessionUpdate"},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"toolCallId":"c","status":"completed"}}}`, "bad frame: session/update: params.update without sessionUpdate"},
	} {
		for _, d := range All() {
			_, err := Read(d, []byte(tc.msg))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.err {
				t.Errorf("%s: %s:\n got %q\nwant %q", d.Info().Name, tc.msg, got, tc.err)
			}
		}
	}
}

// A message nested deeper than encoding/json reads is refused, and the
// error says that the depth is the problem (not that the message is no
// JSON object, which all but the last here are), wherever the depth is.
func TestReadTooDeep(t *testing.T) {
	deep := strings.Repeat("[", 20_000) + strings.Repeat("]", 20_000)
	for _, msg := range []string{
		`{"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"x","rawOutput":` + deep + `}}}`,
		`{"id":1,"result":{"stopReason":"end_turn","x":` + deep + `}}`,
		`{"method":"x/vendor","params":` + deep + `}`,
		deep,
	} {
		for _, d := range All() {
			_, err := Read(d, []byte(msg))
			require.Error(t, err, "%s: %.80s", d.Info().Name, msg)
			assert.ErrorIs(t, err, ErrBadFrame)
			assert.Equal(t, "bad frame: objects and arrays nested past the maximum depth", err.Error(), "%s: %.80s", d.Info().Name, msg)
		}
	}
}
