package proxy

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/replay"
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
		want envelope
	}{
		{`{"jsonrpc":"2.0","method":"x"}`, true, envelope{method: "x"}},
		{` {"id":1,"result":[1,2]} `, true, envelope{id: "1"}}, // a result of another shape still routes by id
		{`{"id":"p\"1","method":"session/update","params":{"update":{"sessionId":"inner"},"sessionId":"S\u0031"}}`, true,
			envelope{id: `"p\"1"`, method: "session/update", paramsSession: "S1"}},
		{`{"id":2,"result":{"sessionId":"N","configOptions":[{"id":"model","text":"a\\"}]}}`, true, envelope{id: "2", resultSession: "N"}},
		{`{"params":"text"}`, true, envelope{}},
		{`{"method":7,"params":{"sessionId":8}}`, true, envelope{}},
		{`{}`, true, envelope{}},
		{`[{"jsonrpc":"2.0"}]`, true, envelope{}},
		{` [ {"id":1,"result":{}} , [] ] `, true, envelope{}},
		{"[\x00 not json]", false, envelope{}}, // a log line in brackets
		{`[INFO] starting`, false, envelope{}},
		{`[1,]`, false, envelope{}},
		{`[tru]`, false, envelope{}},
		{`["a" "b"]`, false, envelope{}},
		{`[{"a":1}}]`, false, envelope{}},
		{`{"broken":`, false, envelope{}},
		{`{"a":1} trailing`, false, envelope{}},
		{`{"a":"unterminated}`, false, envelope{}},
		{`{"a" 1}`, false, envelope{}},
		{`{"a":1,}`, false, envelope{}},
		{`"a string"`, false, envelope{}},
		{`42`, false, envelope{}},
		{`npm WARN deprecated`, false, envelope{}},
		{"\x1b[31m{}", false, envelope{}},
	} {
		env, ok := parse([]byte(tc.line))
		assert.Equal(t, tc.ok, ok, tc.line)
		assert.Equal(t, tc.want, env, tc.line)
	}
}

// parse reads what encoding/json reads, on every message of the recordings
// in the repository.
func TestParseAgreesWithEncodingJSON(t *testing.T) {
	files, err := filepath.Glob("../../test/testdata/recordings/*.ndjson")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	n := 0
	for _, f := range files {
		lines, err := replay.ReadFile(f)
		require.NoError(t, err)
		for _, l := range lines {
			var want struct {
				ID     json.RawMessage `json:"id"`
				Method any             `json:"method"`
				Params any             `json:"params"`
				Result any             `json:"result"`
			}
			if json.Unmarshal(l.Msg, &want) != nil {
				continue
			}
			got, ok := parse(l.Msg)
			require.True(t, ok, "%s:%d", f, l.Number)
			method, _ := want.Method.(string)
			sid := func(v any) string {
				m, _ := v.(map[string]any)
				s, _ := m["sessionId"].(string)
				return s
			}
			assert.Equal(t, envelope{id: string(want.ID), method: method, paramsSession: sid(want.Params), resultSession: sid(want.Result)}, got, "%s:%d", f, l.Number)
			n++
		}
	}
	t.Logf("%d messages", n)
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

// refStringEnd is the end of the string at b[0] (just past its closing
// quote), stepping over each escape: what skipString must find.
func refStringEnd(b []byte) (int, bool) {
	if len(b) == 0 || b[0] != '"' {
		return 0, false
	}
	for j := 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return 0, false
}

// skipString ends a string where an escape-aware scan does, for short
// strings (a loop) and long ones (IndexByte), with escaped quotes and runs
// of backslashes on either side of where one hands over to the other.
func TestSkipString(t *testing.T) {
	var cases []string
	for _, n := range []int{0, 1, 30, 31, 32, 33, 40, 100} {
		pad := strings.Repeat("a", n)
		cases = append(cases,
			`"`+pad+`"`, `"`+pad+`\""x"`, `"`+pad+`\\"x"`, `"`+pad+`\\\"x"`, `"`+pad+`\\\\"`,
			`"`+pad+`\`, `"`+pad, `"\"`+pad+`"`, `"`+pad+`é\u0000"`)
	}
	for _, c := range cases {
		want, wantOK := refStringEnd([]byte(c))
		s := scanner{b: []byte(c)}
		ok := s.skipString()
		require.Equal(t, wantOK, ok, "%q", c)
		if ok {
			require.Equal(t, want, s.i, "%q", c)
		}
	}
}

func FuzzSkipString(f *testing.F) {
	f.Add([]byte(`"abc\"def"`))
	f.Add([]byte(`"` + strings.Repeat(`\\`, 20) + `"`))
	f.Add([]byte(`"` + strings.Repeat("x", 31) + `\"" `))
	f.Fuzz(func(t *testing.T, b []byte) {
		b = append([]byte{'"'}, b...)
		want, wantOK := refStringEnd(b)
		s := scanner{b: b}
		ok := s.skipString()
		if ok != wantOK || (ok && s.i != want) {
			t.Fatalf("%q: skipString %v at %d, want %v at %d", b, ok, s.i, wantOK, want)
		}
	})
}
