package normalize_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/normalize"
	"github.com/acpnorm/acpnorm/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unnamedField is where Hooks.UnrecognizedField says an agent named
// nothing.
const unnamedField = "agentInfo.name (absent)"

type said struct{ session, dialect, version, what, field string }

// sayingNormalizer returns a Normalizer whose Hooks.UnrecognizedField
// appends to got, with the session fed last (*session).
func sayingNormalizer(got *[]said, session *string, opts ...normalize.Option) *normalize.Normalizer {
	return normalize.New(append(opts, normalize.WithHooks(normalize.Hooks{UnrecognizedField: func(d, v, what, field string) {
		*got = append(*got, said{*session, d, v, what, field})
	}}))...)
}

// An agent whose initialize result gives no agentInfo.name (ACP makes
// agentInfo optional) and that shows no sign of any dialect is read with
// the generic dialect; when that dialect reads one of its shell calls,
// the session says so, once, as an agent_name Hooks.Unrecognized: on main
// it said nothing, and a known agent misread (a made-up exit code
// believed, a wrapper kept) went unnoticed. A session that showed a sign,
// saw no initialize result, or read no shell call says nothing.
func TestUnnamedAgentSaid(t *testing.T) {
	var got []said
	var session string
	n := sayingNormalizer(&got, &session)
	feed := func(s string, frames ...string) {
		t.Helper()
		session = s
		for _, f := range frames {
			_, err := n.Feed(s, []byte(f))
			require.NoError(t, err)
		}
	}
	readCall := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call","toolCallId":"r1","kind":"read","title":"Read a.txt","status":"completed"}}}`
	secondCall := strings.ReplaceAll(openCall, `"c1"`, `"c2"`)
	claudeCall := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"_meta":{"claudeCode":{"toolName":"Bash"}},"toolCallId":"toolu_1","sessionUpdate":"tool_call","status":"pending","title":"Terminal","kind":"execute","rawInput":{"command":"ls"}}}}`

	feed("no agentInfo", `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"authMethods":[]}}`, openCall, endCall, secondCall)
	feed("agentInfo without a name", `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"version":"1.0.0"}}}`, openCall)
	assert.Equal(t, []said{
		{"no agentInfo", "generic", "unknown", normalize.UnrecognizedAgentName, unnamedField},
		{"agentInfo without a name", "generic", "1.0.0", normalize.UnrecognizedAgentName, unnamedField},
	}, got)

	got = nil
	feed("no initialize seen", openCall)
	feed("no shell call", `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}`, readCall)
	feed("a sign in the initialize result", `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"authMethods":[{"id":"opencode-login"}]}}`, openCall)
	assert.Empty(t, got)

	// The sign comes with the first tool call: that call is read with
	// the agent's dialect, and nothing is said.
	session = "a sign in the first tool call"
	out, err := n.Feed(session, []byte(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}`))
	require.NoError(t, err)
	assert.Empty(t, out)
	out, err = n.Feed(session, []byte(claudeCall))
	require.NoError(t, err)
	require.Len(t, out, 1)
	assert.Equal(t, "claude", out[0].Dialect)
	assert.Empty(t, got)

	// A name no dialect knows is said as before.
	feed("an unknown name", `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"acme-agent"}}}`, openCall)
	assert.Equal(t, []said{{"an unknown name", "generic", "unknown", normalize.UnrecognizedAgentName, "agentInfo.name"}}, got)
}

// The session keeps, in the store, that its agent named nothing: a
// replica that loads it says so when it reads a shell call, and still
// takes a sign the agent shows later.
func TestUnnamedAgentPersisted(t *testing.T) {
	st := store.NewMemory()
	var got []said
	var session string
	a := sayingNormalizer(&got, &session, normalize.WithStore(st))
	for _, s := range []string{"later call", "later sign"} {
		session = s
		_, err := a.Feed(s, []byte(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}`))
		require.NoError(t, err)
	}
	assert.Empty(t, got)

	b := sayingNormalizer(&got, &session, normalize.WithStore(st))
	session = "later call"
	_, err := b.Feed(session, []byte(openCall))
	require.NoError(t, err)
	assert.Equal(t, []said{{"later call", "generic", "unknown", normalize.UnrecognizedAgentName, unnamedField}}, got)

	got = nil
	session = "later sign"
	out, err := b.Feed(session, []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"_meta":{"claudeCode":{"toolName":"Bash"}},"toolCallId":"toolu_1","sessionUpdate":"tool_call","status":"pending","title":"Terminal","kind":"execute","rawInput":{"command":"ls"}}}}`))
	require.NoError(t, err)
	require.Len(t, out, 1)
	assert.Equal(t, "claude", out[0].Dialect)
	assert.Empty(t, got)
}

// unsignedBuilds are the recordings (by the start of their file name)
// whose agent, without its agentInfo.name, shows no sign of its dialect
// (see the dialect package's TestEveryRecordingShowsItsAgent).
var unsignedBuilds = []string{
	// Copilot 0.0.399 offers no auth method (copilot-login came with
	// 0.0.401) and sends nothing only Copilot sends.
	"copilot-0.0.399_",
}

// withoutAgentName returns msg without `agentInfo.name` when it is a
// result that gives one, and whether it was.
func withoutAgentName(t *testing.T, msg []byte) ([]byte, bool) {
	t.Helper()
	if !bytes.Contains(msg, []byte(`"agentInfo"`)) {
		return msg, false
	}
	d := json.NewDecoder(bytes.NewReader(msg))
	d.UseNumber()
	var m map[string]any
	require.NoError(t, d.Decode(&m))
	r, _ := m["result"].(map[string]any)
	ai, _ := r["agentInfo"].(map[string]any)
	if _, ok := ai["name"]; !ok {
		return msg, false
	}
	delete(ai, "name")
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	require.NoError(t, e.Encode(m))
	return bytes.TrimRight(buf.Bytes(), "\n"), true
}

// Every committed recording, its initialize results without
// agentInfo.name: an agent that shows a sign of its dialect reads exactly
// as when it named itself (every revision and error), and nothing is
// said; one that shows none (unsignedBuilds) is read with the generic
// dialect and the session says that its agent named nothing. On main
// every Claude, Codex, Gemini, OpenCode, Kilo, Qwen and Droid recording
// read as generic, silently.
func TestUnnamedAgentReadsAsNamedOrSaid(t *testing.T) {
	files, _ := filepath.Glob("../test/testdata/recordings/*.ndjson")
	agents, _ := filepath.Glob("../test/testdata/recordings/agents/*.ndjson")
	require.NotEmpty(t, agents)
	feed := func(msgs [][]byte) (out []*normalize.ShellExec, errs []error, reports []said) {
		var session string
		n := sayingNormalizer(&reports, &session)
		for i, msg := range msgs {
			got, err := n.Feed("s", msg, normalize.WithSequence(uint64(i+1)))
			out = append(out, got...)
			errs = append(errs, err)
		}
		return out, errs, reports
	}
	stripped := 0
	for _, file := range append(files, agents...) {
		base := filepath.Base(file)
		msgs := frames(file)
		unnamed := make([][]byte, len(msgs))
		changed := false
		for i, msg := range msgs {
			var c bool
			unnamed[i], c = withoutAgentName(t, msg)
			changed = changed || c
		}
		if !changed {
			continue // Grok names nothing
		}
		stripped++
		named, namedErrs, namedReports := feed(msgs)
		got, gotErrs, reports := feed(unnamed)
		unsigned := false
		for _, p := range unsignedBuilds {
			unsigned = unsigned || strings.HasPrefix(base, p)
		}
		if unsigned {
			require.NotEmpty(t, got, base)
			assert.Equal(t, "generic", got[0].Dialect, base)
			// Before anything else the generic reading of its wire says.
			require.NotEmpty(t, reports, base)
			assert.Equal(t, said{"", "generic", named[0].AgentVersion, normalize.UnrecognizedAgentName, unnamedField}, reports[0], base)
			continue
		}
		require.Equal(t, named, got, base)
		require.Equal(t, namedErrs, gotErrs, base)
		// Without its name the session says what it says with it (for
		// most recordings nothing, TestRecordingsRaiseNoReport).
		assert.Equal(t, namedReports, reports, base)
	}
	assert.Greater(t, stripped, len(agents)/2)
}
