package dialect

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestV2ResumeReplays: ACP v2 restores a session with session/resume, and
// replays its history only when replayFrom asks for it (as v1's
// session/load always does); without replayFrom nothing is replayed.
func TestV2ResumeReplays(t *testing.T) {
	for _, c := range []struct {
		msg  string
		load bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"session/resume","params":{"sessionId":"s","cwd":"/w","mcpServers":[],"replayFrom":{"type":"start"}}}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"session/resume","params":{"sessionId":"s","cwd":"/w"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"session/resume","params":{"sessionId":"s","cwd":"/w","replayFrom":null}}`, false},
	} {
		f, err := Read(Generic(), []byte(c.msg))
		require.NoError(t, err, c.msg)
		assert.Equal(t, c.load, f.Load, c.msg)
		assert.Equal(t, "/w", f.SessionCwd, c.msg)
		if c.load {
			assert.Equal(t, "1", f.LoadID)
		}
	}
}
