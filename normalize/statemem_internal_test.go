package normalize

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/store"
	"github.com/stretchr/testify/require"
)

// What a session's own state is charged (session.state) is what it holds,
// whatever the frames did to it: every path that keeps or forgets an ask,
// a terminal, a terminal request or the cwd charges or gives back.
func TestStateChargeMatchesState(t *testing.T) {
	big := strings.Repeat("b", 300)
	open := func(id string) string {
		return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call","toolCallId":"` + id + `","kind":"execute","title":"ls","status":"in_progress","rawInput":{"command":"ls"}}}}`
	}
	names := func(id, term, status string) string {
		return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call_update","toolCallId":"` + id + `","status":"` + status + `","content":[{"type":"terminal","terminalId":"` + term + `"}]}}}`
	}
	ask := func(n int, id string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/request_permission","params":{"sessionId":"x","toolCall":{"toolCallId":%q},"options":[{"optionId":"ok","kind":"allow_once"},{"optionId":"no-%s","kind":"reject_once"},{"optionId":"never","kind":"reject_always"}]}}`, n, id, big[:200])
	}
	create := func(n int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"terminal/create","params":{"sessionId":"x","command":"make %s","cwd":"/w/%s"}}`, n, big, big)
	}
	result := func(n int, res string) string { return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":%s}`, n, res) }
	frames := []string{
		`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w/` + big + `","mcpServers":[]}}`,
		open("c1"), ask(2, "c1"), ask(2, "c1"), ask(3, "c1"),
		result(2, `{"outcome":{"outcome":"selected","optionId":"ok"}}`),
		create(4), create(4), create(5), create(6),
		result(4, `{"terminalId":"t1"}`), `{"jsonrpc":"2.0","id":5,"error":{"code":1,"message":"no"}}`,
		result(6, `{"terminalId":"t2"}`),
		`{"jsonrpc":"2.0","id":7,"method":"terminal/output","params":{"sessionId":"x","terminalId":"t2"}}`,
		result(7, `{"output":"`+big+`","truncated":false}`),
		create(8), result(8, `{"terminalId":"t2"}`), // the id again: t2 is another terminal
		names("c1", "t1", "in_progress"), names("c1", "t1", "completed"),
		open("c2"), ask(9, "c2"), create(10), result(10, `{"terminalId":"t3"}`), names("c2", "t3", "completed"),
		// Long ids: an ask's, a terminal's shown by two calls in turn, a
		// create's and the terminal its answer names.
		open("c4"), strings.Replace(ask(12, "c4"), `"id":12`, `"id":"`+big[:250]+`"`, 1),
		names("c4", "T"+big[:249], "in_progress"), open("c5"), names("c5", "T"+big[:249], "in_progress"),
		strings.Replace(create(13), `"id":13`, `"id":"`+big[:250]+`"`, 1),
		`{"jsonrpc":"2.0","id":"` + big[:250] + `","result":{"terminalId":"T` + big[:249] + `"}}`,
		names("c4", "T"+big[:249], "completed"), names("c5", "T"+big[:249], "completed"),
		`{"jsonrpc":"2.0","id":11,"method":"session/new","params":{"cwd":"/v","mcpServers":[]}}`,
	}
	check := func(t *testing.T, n *Normalizer, at string) {
		t.Helper()
		s, err := n.ss.lock(context.Background(), n.ns, "S", false)
		require.NoError(t, err)
		if s == nil {
			require.Zero(t, n.ss.held.Load(), "%s: no session, nothing held", at)
			return
		}
		defer s.unlock()
		require.Equal(t, s.stateBytes(), s.state, "%s: state charged", at)
		held := s.state
		for _, e := range s.calls {
			held += e.size
		}
		out := 0
		for _, ct := range s.terms {
			out += len(ct.output)
		}
		require.Equal(t, out, s.termOutput, "%s: terminal output", at)
		held += out
		require.Equal(t, held, s.held, "%s: session held", at)
		require.Equal(t, int64(held), n.ss.held.Load(), "%s: service held", at)
	}
	// With a small share, some of it is refused: what is kept is still
	// what is charged.
	for _, c := range []struct {
		withStore bool
		share     int
	}{{false, 0}, {true, 0}, {false, 2500}, {true, 2500}, {false, 1200}} {
		withStore := c.withStore
		t.Run(fmt.Sprintf("store=%v,share=%d", withStore, c.share), func(t *testing.T) {
			now := time.Unix(1000, 0)
			opts := []Option{WithClock(func() time.Time { return now }), WithGrace(time.Second)}
			if c.share > 0 {
				opts = append(opts, WithSessionMemory(c.share))
			}
			if withStore {
				opts = append(opts, WithStore(store.NewMemory()))
			}
			n := New(opts...)
			for i, f := range frames {
				_, err := n.Feed("S", []byte(f), WithSequence(uint64(i+1)), WithCwd(fmt.Sprintf("/by/hand/%d", i%3)))
				if err != nil && c.share == 0 {
					require.NotContains(t, err.Error(), "limit", "frame %d", i+1)
				}
				check(t, n, fmt.Sprintf("frame %d", i+1))
			}
			now = now.Add(2 * time.Second) // the ended calls pass their grace
			n.Sweep()
			if withStore { // a request buries them
				_, err := n.Feed("S", []byte(open("c3")), WithSequence(uint64(len(frames)+1)))
				require.NoError(t, err)
			}
			check(t, n, "after the grace")
			_, err := n.CloseSession("S", WithSequence(uint64(len(frames)+2)))
			require.NoError(t, err)
			check(t, n, "closed")
		})
	}
}
