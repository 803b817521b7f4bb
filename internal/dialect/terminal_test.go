package dialect

import (
	"testing"

	"github.com/acpnorm/acpnorm/internal/accum"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every dialect reads the client-terminal requests and the responses that
// can answer them the same way; fields of another JSON type read as
// absent, never as an error.
func TestReadClientTerminals(t *testing.T) {
	cases := []struct {
		name string
		msg  string
		req  *TerminalRequest
		resp *Response
	}{{
		name: "create with the whole line as command",
		msg:  `{"jsonrpc":"2.0","id":2,"method":"terminal/create","params":{"sessionId":"s","command":"for i in 1 2; do echo $i; done","cwd":"/w","outputByteLimit":1048576}}`,
		req:  &TerminalRequest{RequestID: "2", Method: MethodTerminalCreate, Command: "for i in 1 2; do echo $i; done", Cwd: "/w"},
	}, {
		name: "create with args, quoted where they need it",
		msg:  `{"jsonrpc":"2.0","id":"a","method":"terminal/create","params":{"command":"grep","args":["-r","two words","it's",7,""],"env":[{"name":"X","value":"1"}],"cwd":null}}`,
		req:  &TerminalRequest{RequestID: `"a"`, Method: MethodTerminalCreate, Command: `grep -r 'two words' 'it'\''s' ''`},
	}, {
		name: "create with fields of other types",
		msg:  `{"jsonrpc":"2.0","id":3,"method":"terminal/create","params":{"command":["ls"],"args":"-l","cwd":5}}`,
		req:  &TerminalRequest{RequestID: "3", Method: MethodTerminalCreate},
	}, {
		name: "output request",
		msg:  `{"jsonrpc":"2.0","id":4,"method":"terminal/output","params":{"sessionId":"s","terminalId":"term_1"}}`,
		req:  &TerminalRequest{RequestID: "4", Method: MethodTerminalOutput, TerminalID: "term_1"},
	}, {
		name: "kill and release",
		msg:  `{"jsonrpc":"2.0","id":5,"method":"terminal/kill","params":{"terminalId":"term_1"}}`,
		req:  &TerminalRequest{RequestID: "5", Method: MethodTerminalKill, TerminalID: "term_1"},
	}, {
		name: "create result",
		msg:  `{"jsonrpc":"2.0","id":2,"result":{"terminalId":"term_1"}}`,
		resp: &Response{RequestID: "2", TerminalID: "term_1"},
	}, {
		name: "output result, still running",
		msg:  `{"jsonrpc":"2.0","id":4,"result":{"output":"tick1\n","truncated":false,"exitStatus":null}}`,
		resp: &Response{RequestID: "4", Output: "tick1\n", HasOutput: true},
	}, {
		name: "output result, cut and exited",
		msg:  `{"jsonrpc":"2.0","id":4,"result":{"output":"","truncated":true,"exitStatus":{"exitCode":4,"signal":null}}}`,
		resp: &Response{RequestID: "4", HasOutput: true, Truncated: true, ExitStatus: &TerminalExit{Code: Code{Value: 4, Known: true}}},
	}, {
		name: "wait_for_exit result with a signal",
		msg:  `{"jsonrpc":"2.0","id":9,"result":{"exitCode":null,"signal":"SIGTERM"}}`,
		resp: &Response{RequestID: "9", HasExit: true, Exit: TerminalExit{Signal: "SIGTERM"}},
	}, {
		name: "members of other types",
		msg:  `{"jsonrpc":"2.0","id":9,"result":{"output":5,"truncated":"yes","exitStatus":"done","terminalId":7}}`,
	}, {
		name: "an error response",
		msg:  `{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"spawn ENOENT"}}`,
		resp: &Response{RequestID: "2", Error: true},
	}, {
		name: "other results say nothing about terminals",
		msg:  `{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, d := range All() {
				f, err := Read(d, []byte(tc.msg))
				require.NoError(t, err, d.Info().Name)
				assert.Equal(t, tc.req, f.Terminal, d.Info().Name)
				assert.Equal(t, tc.resp, f.Response, d.Info().Name)
			}
		})
	}
}

// The exit status of a client terminal is exit evidence of the strongest
// source, never a placeholder; a signal that cannot be named is a failed
// verdict.
func TestTerminalExitObserve(t *testing.T) {
	f, err := Read(Generic(), []byte(`{"jsonrpc":"2.0","id":1,"result":{"output":"x","exitStatus":{"exitCode":"3","signal":{"odd":1}}}}`))
	require.NoError(t, err)
	require.NotNil(t, f.Response.ExitStatus)
	var o accum.Observation
	f.Response.ExitStatus.Observe(&o)
	assert.Equal(t, ex(3, accum.ExitClient, false), o.Exit)
	assert.Equal(t, accum.VerdictFailed, o.Verdict)
}
