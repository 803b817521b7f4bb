package normalize_test

import (
	"testing"

	"github.com/acpnorm/acpnorm/normalize"
	"github.com/acpnorm/acpnorm/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	initOpencode = `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"opencode","version":"1.2.3"}}}`
	openCall     = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","title":"ls","status":"pending","rawInput":{"command":"ls"}}}}`
	endCall      = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"output":"a\n","metadata":{"exit":0}}}}}`
)

// The agent's build, from its initialize result, is on every revision,
// whether the dialect was detected or named by the client.
func TestAgentVersionOnRevisions(t *testing.T) {
	for _, named := range []string{"", "auto", "opencode"} {
		n := normalize.New()
		var got []*normalize.ShellExec
		for _, f := range []string{initOpencode, openCall, endCall} {
			out, err := n.Feed("s", []byte(f), normalize.WithDialect(named))
			require.NoError(t, err)
			got = append(got, out...)
		}
		require.Len(t, got, 2, "dialect %q", named)
		for _, x := range got {
			assert.Equal(t, "opencode", x.Dialect)
			assert.Equal(t, "1.2.3", x.AgentVersion, "dialect %q", named)
		}
	}
}

// The build is kept with the session in the store: a replica that loads
// the session reads it for the same build.
func TestAgentVersionPersisted(t *testing.T) {
	st := store.NewMemory()
	a := normalize.New(normalize.WithStore(st))
	for _, f := range []string{initOpencode, openCall} {
		_, err := a.Feed("s", []byte(f))
		require.NoError(t, err)
	}
	b := normalize.New(normalize.WithStore(st))
	out, err := b.Feed("s", []byte(endCall))
	require.NoError(t, err)
	require.Len(t, out, 1)
	assert.Equal(t, "1.2.3", out[0].AgentVersion)
	assert.Equal(t, "opencode", out[0].Dialect)
}

// A future build that moves the exit code to a field its dialect never
// read: the call's exit stays unknown, and Hooks.Unrecognized says so,
// with the dialect and the build, once per frame that carries it.
func TestFutureBuildCounted(t *testing.T) {
	type count struct{ dialect, version, what string }
	var got []count
	n := normalize.New(normalize.WithHooks(normalize.Hooks{Unrecognized: func(d, v, what string) {
		got = append(got, count{d, v, what})
	}}))
	future := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"output":"boom\n","metadata":{"exit_status":3}}}}}`
	var last *normalize.ShellExec
	for _, f := range []string{
		`{"jsonrpc":"2.0","id":0,"result":{"agentInfo":{"name":"opencode","version":"v42.0.0-rc.1+abc"}}}`,
		openCall, future,
	} {
		out, err := n.Feed("s", []byte(f))
		require.NoError(t, err)
		if len(out) > 0 {
			last = out[len(out)-1]
		}
	}
	require.NotNil(t, last)
	assert.Equal(t, normalize.StateEnded, last.State)
	assert.Nil(t, last.ExitCode, "the exit is not inferred")
	assert.Equal(t, []count{{"opencode", "42.0.0-rc.1", normalize.UnrecognizedExitField}}, got)

	// A tool that is not a shell is not counted.
	got = nil
	_, err := n.Feed("s", []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call","toolCallId":"r1","kind":"read","status":"completed","rawOutput":{"metadata":{"exit_status":3}}}}}`))
	require.NoError(t, err)
	assert.Empty(t, got)
}
