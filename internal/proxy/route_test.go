package proxy

import (
	"fmt"
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	c2a = pb.Direction_DIRECTION_CLIENT_TO_AGENT
	a2c = pb.Direction_DIRECTION_AGENT_TO_CLIENT
)

type wireMsg struct {
	dir pb.Direction
	msg string
}

// routeAll routes msgs in order and returns, per frame fed, "session:seq".
func routeAll(t *testing.T, name string, msgs []wireMsg) []string {
	t.Helper()
	r := newRouter(name)
	var got []string
	for i, m := range msgs {
		env, ok := parse([]byte(m.msg))
		require.True(t, ok, m.msg)
		for _, x := range r.route(frame{seq: uint64(i + 1), dir: m.dir, msg: []byte(m.msg)}, &env) {
			got = append(got, fmt.Sprintf("%s:%d", x.session, x.seq))
		}
	}
	return got
}

func TestRoute(t *testing.T) {
	initialize := []wireMsg{
		{c2a, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`},
		{a2c, `{"jsonrpc":"2.0","id":0,"result":{"agentInfo":{"name":"a"}}}`},
	}
	for _, tc := range []struct {
		name    string
		session string
		msgs    []wireMsg
		want    []string
	}{{
		name: "one session: every frame, in wire order",
		msgs: append(initialize,
			wireMsg{c2a, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w"}}`},
			wireMsg{a2c, `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"S1"}}`},
			wireMsg{c2a, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"S1"}}`},
			wireMsg{a2c, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S1"}}`},
			wireMsg{a2c, `{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`},
			wireMsg{a2c, `{"jsonrpc":"2.0","method":"x/unknown"}`},
		),
		want: []string{"S1:1", "S1:2", "S1:3", "S1:4", "S1:5", "S1:6", "S1:7", "S1:8"},
	}, {
		name:    "--session names the first session, later ones get -2",
		session: "dev",
		msgs: append(initialize,
			wireMsg{c2a, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w"}}`},
			wireMsg{a2c, `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"S1"}}`},
			wireMsg{c2a, `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/v"}}`},
			wireMsg{a2c, `{"jsonrpc":"2.0","id":2,"result":{"sessionId":"S2"}}`},
		),
		want: []string{"dev:1", "dev:2", "dev:3", "dev:4", "dev-2:1", "dev-2:2", "dev-2:5", "dev-2:6"},
	}, {
		name: "two sessions at once: answers follow their requests, each session gets the preamble",
		msgs: append(initialize,
			wireMsg{c2a, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w"}}`},
			wireMsg{a2c, `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"S1"}}`},
			wireMsg{c2a, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"S1"}}`},
			wireMsg{c2a, `{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":"/v"}}`},
			wireMsg{a2c, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S1"}}`},
			wireMsg{a2c, `{"jsonrpc":"2.0","id":3,"result":{"sessionId":"S2"}}`},
			wireMsg{c2a, `{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"S2"}}`},
			wireMsg{a2c, `{"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{"sessionId":"S1"}}`},
			wireMsg{a2c, `{"jsonrpc":"2.0","id":4,"result":{"stopReason":"end_turn"}}`},
			wireMsg{c2a, `{"jsonrpc":"2.0","id":"p1","result":{"outcome":{"outcome":"cancelled"}}}`},
			wireMsg{a2c, `{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`},
		),
		want: []string{
			"S1:1", "S1:2", "S1:3", "S1:4", "S1:5",
			"S1:7",
			"S2:1", "S2:2", "S2:6", "S2:8",
			"S2:9",
			"S1:10",
			"S2:11", // S2's turn ends; S1's call is still open
			"S1:12",
			"S1:13",
		},
	}, {
		name: "session/load names its session in the request",
		msgs: append(initialize,
			wireMsg{c2a, `{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"old","cwd":"/w"}}`},
			wireMsg{a2c, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"old"}}`},
			wireMsg{a2c, `{"jsonrpc":"2.0","id":1,"result":null}`},
		),
		want: []string{"old:1", "old:2", "old:3", "old:4", "old:5"},
	}, {
		name: "no session ever: nothing is fed",
		msgs: append(initialize, wireMsg{a2c, `[1,2]`}),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, routeAll(t, tc.session, tc.msgs))
		})
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		line string
		ok   bool
	}{
		{`{"jsonrpc":"2.0","method":"x"}`, true},
		{`{"id":1,"result":[1,2]}`, true}, // a result of another shape still routes by id
		{`{"params":"text"}`, true},
		{`[{"jsonrpc":"2.0"}]`, true},
		{`{"broken":`, false},
		{`"a string"`, false},
		{`42`, false},
		{`npm WARN deprecated`, false},
		{"\x1b[31m{}", false},
	} {
		_, ok := parse([]byte(tc.line))
		assert.Equal(t, tc.ok, ok, tc.line)
	}
}

// Requests that are never answered do not make the router grow.
func TestRouteBounded(t *testing.T) {
	r := newRouter("")
	for i := range 3 * maxPending {
		msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"S"}}`, i)
		env, _ := parse([]byte(msg))
		r.route(frame{seq: uint64(i + 1), dir: c2a, msg: []byte(msg)}, &env)
	}
	assert.LessOrEqual(t, len(r.clientReqs), maxPending)
	pre := newRouter("")
	for i := range 2 * maxPreamble {
		msg := `{"jsonrpc":"2.0","method":"x"}`
		env, _ := parse([]byte(msg))
		pre.route(frame{seq: uint64(i + 1), dir: a2c, msg: []byte(msg)}, &env)
	}
	assert.Len(t, pre.preamble, maxPreamble)
}
