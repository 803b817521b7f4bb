package normalize_test

import (
	"fmt"
	"testing"

	"github.com/acpnorm/acpnorm/normalize"
	"github.com/acpnorm/acpnorm/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A request whose commit conflicts is applied again: whole (WithWhole)
// was asked about the revisions of the try thrown away, which are never
// handed on, and discarded (WithDiscarded) says so before the next try.
func TestDiscardedTryIsTold(t *testing.T) {
	st := store.NewMemory()
	a, b := normalize.New(normalize.WithStore(st)), normalize.New(normalize.WithStore(st))
	update := func(u string) []byte {
		return []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":` + u + `}}`)
	}
	open := update(`{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","title":"make","status":"in_progress","rawInput":{"command":"make"}}`)
	delta := func(data string) []byte {
		return update(fmt.Sprintf(`{"sessionUpdate":"tool_call_update","toolCallId":"c1","_meta":{"terminal_output":{"terminal_id":"c1","data":%q}}}`, data))
	}
	var told []string
	var handed []uint32
	opts := []normalize.FeedOption{
		normalize.WithWhole(func(_, call string, rev uint32, _ bool) bool {
			told = append(told, fmt.Sprintf("whole %s %d", call, rev))
			return false
		}),
		normalize.WithDiscarded(func(session string) { told = append(told, "discarded "+session) }),
		normalize.WithEmit(func(ev normalize.Event) error {
			require.Nil(t, ev.Error)
			handed = append(handed, ev.ShellExec.Revision)
			return nil
		}),
	}
	for _, f := range [][]byte{open, delta("a\n")} {
		_, err := a.Feed("s", f, opts...)
		require.NoError(t, err)
	}
	_, err := b.Feed("s", delta("b\n")) // revision 3, on the other replica
	require.NoError(t, err)
	told, handed = nil, nil
	_, err = a.Feed("s", delta("c\n"), opts...) // a's cache is behind
	require.NoError(t, err)
	assert.Equal(t, []string{"whole c1 3", "discarded s", "whole c1 4"}, told)
	assert.Equal(t, []uint32{4}, handed)

	// Without a conflict nothing is discarded.
	told, handed = nil, nil
	_, err = a.Feed("s", delta("d\n"), opts...)
	require.NoError(t, err)
	assert.Equal(t, []string{"whole c1 5"}, told)
	assert.Equal(t, []uint32{5}, handed)
}
