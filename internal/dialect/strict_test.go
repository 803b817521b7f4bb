package dialect

import "testing"

// TestReadStrictLayer holds the JSON-RPC layer to strict types while vendor
// fields stay lenient; the errors are those encoding/json gives.
func TestReadStrictLayer(t *testing.T) {
	for _, tc := range []struct{ msg, err string }{
		{`{"jsonrpc":2,"method":"session/update","params":{"update":{"content":{}}}}`, "bad frame: not a JSON object: json: cannot unmarshal number into Go struct field envelope.jsonrpc of type string"},
		{`{"method":"session/update","method":5,"params":{}}`, "bad frame: not a JSON object: json: cannot unmarshal number into Go struct field envelope.method of type string"},
		{`{"method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}`, ""},
		{`{"method":"session/update","params":{"update":{"sessionUpdate":"tool_call","toolCallId":"x","content":{}}},"result":{"agentInfo":5}}`, ""},
		{`{"id":1,"result":{"agentInfo":{"name":7}}}`, "bad frame: response: json: cannot unmarshal number into Go struct field .agentInfo.name of type string"},
		{`{"id":1,"result":[1]}`, ""},
		{`{"id":1,"result":{"stopReason":"end_turn","x":{"y":[}}}`, "bad frame: not a JSON object: invalid character '}' looking for beginning of value"},
		{`{"id":1,"method":"session/request_permission","params":{"toolCall":{"toolCallId":5}}}`, "bad frame: session/request_permission: json: cannot unmarshal number into Go struct field .toolCall.toolCallId of type string"},
		{`{"id":1,"method":"session/request_permission","params":{"toolCall":{"toolCallId":"a","title":5},"options":[{"optionId":"r","kind":"reject_once"}]}}`, ""},
		{`{"id":1,"method":"session/request_permission","params":{"options":{}}}`, "bad frame: session/request_permission: json: cannot unmarshal object into Go struct field permissionEnvelope.options of type []struct { OptionID string \"json:\\\"optionId\\\"\"; Kind string \"json:\\\"kind\\\"\" }"},
		{`{"id":1,"method":"session/new","params":{"cwd":5}}`, "bad frame: session/new: json: cannot unmarshal number into Go struct field .cwd of type string"},
		{`{"id":1,"method":"session/new","params":[]}`, "bad frame: session/new: json: cannot unmarshal array into Go value of type struct { Cwd string \"json:\\\"cwd\\\"\" }"},
		{`{"id":1,"method":"session/update","params":5}`, ""},
		{`{"method":"session/update","params":null}`, "bad frame: session/update without params"},
		{`[]`, "bad frame: not a JSON object: json: cannot unmarshal array into Go value of type dialect.envelope"},
		{`null`, "bad frame: neither a request, a notification nor a response (no method and no id)"},
		{`{"id":null}`, ""},
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
