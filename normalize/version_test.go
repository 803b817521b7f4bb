package normalize_test

import (
	"path/filepath"
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
// with the dialect and the build, once in the session.
func TestFutureBuildCounted(t *testing.T) {
	type count struct{ dialect, version, what string }
	var got []count
	n := normalize.New(normalize.WithHooks(normalize.Hooks{Unrecognized: func(d, v, what string) {
		got = append(got, count{d, v, what})
	}}))
	future := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"output":"boom\n","metadata":{"exit_status":3}}}}}`
	last := lastOf(t, n,
		`{"jsonrpc":"2.0","id":0,"result":{"agentInfo":{"name":"opencode","version":"v42.0.0-rc.1+abc"}}}`,
		openCall, future)
	assert.Equal(t, normalize.StateEnded, last.State)
	assert.Nil(t, last.ExitCode, "the exit is not inferred")
	assert.Equal(t, []count{{"opencode", "42.0.0-rc.1", normalize.UnrecognizedExitField}}, got)

	// A tool that is not a shell is not counted.
	got = nil
	_, err := n.Feed("s", []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call","toolCallId":"r1","kind":"read","status":"completed","rawOutput":{"metadata":{"exit_status":3}}}}}`))
	require.NoError(t, err)
	assert.Empty(t, got)
}

// Hooks.Unrecognized says each kind once per session, however many
// frames carry it (a renamed member on every live delta would otherwise
// count every frame); another session says it again. A status ACP does not
// define, a content type it does not define and an agent name no dialect
// knows are kinds of their own.
func TestUnrecognizedOncePerSession(t *testing.T) {
	type count struct{ session, what string }
	var got []count
	var session string
	n := normalize.New(normalize.WithHooks(normalize.Hooks{Unrecognized: func(_, _, what string) {
		got = append(got, count{session, what})
	}}))
	feed := func(s string, frames ...string) {
		t.Helper()
		session = s
		for _, f := range frames {
			_, err := n.Feed(s, []byte(f))
			require.NoError(t, err)
		}
	}
	live := func(id string) string {
		return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call_update","toolCallId":"` + id + `","status":"in_progress","rawOutput":{"metadata":{"stdout_chunk":"line of output\n"}}}}}`
	}
	for _, s := range []string{"a", "b"} {
		feed(s, initOpencode, openCall)
		for i := 0; i < 50; i++ {
			feed(s, live("c1"))
		}
	}
	assert.Equal(t, []count{{"a", normalize.UnrecognizedOutputField}, {"b", normalize.UnrecognizedOutputField}}, got)

	got = nil
	feed("c", initOpencode, openCall,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"errored","rawOutput":{"output":"a\n","metadata":{"exit":3}}}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"in_progress","content":[{"type":"terminal_output","data":"a\n"}]}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"in_progress","content":[{"type":"content","content":{"type":"stdout","text":"a\n"}}]}}}`)
	assert.Equal(t, []count{{"c", normalize.UnrecognizedStatusValue}, {"c", normalize.UnrecognizedContentType}}, got)

	got = nil
	feed("d", `{"jsonrpc":"2.0","id":0,"result":{"agentInfo":{"name":"acme-agent","version":"1.0.0"}}}`, openCall)
	feed("e", `{"jsonrpc":"2.0","id":0,"result":{"agentInfo":{"name":"opencode","version":"1.0.0"}}}`, openCall)
	assert.Equal(t, []count{{"d", normalize.UnrecognizedAgentName}}, got)
}

// A dialect named on every frame reads as the same dialect detected: it is
// bound to the agent's build and to the client's capabilities too, so an
// older build's made-up exit codes are not believed because the client
// said which agent it runs. Every recording, the whole revisions and
// errors compared.
func TestNamedDialectReadsAsDetected(t *testing.T) {
	files, _ := filepath.Glob("../test/testdata/recordings/*.ndjson")
	agents, _ := filepath.Glob("../test/testdata/recordings/agents/*.ndjson")
	files = append(files, agents...)
	require.NotEmpty(t, agents)
	feed := func(msgs [][]byte, named string) (out []*normalize.ShellExec, errs []error) {
		n := normalize.New()
		for i, msg := range msgs {
			got, err := n.Feed("s", msg, normalize.WithSequence(uint64(i+1)), normalize.WithDialect(named))
			out = append(out, got...)
			errs = append(errs, err)
		}
		return out, errs
	}
	compared := 0
	for _, file := range files {
		msgs := frames(file)
		detected, detectedErrs := feed(msgs, "")
		if len(detected) == 0 {
			continue
		}
		name := detected[0].Dialect
		named, namedErrs := feed(msgs, name)
		require.Equal(t, detected, named, "%s named %q", filepath.Base(file), name)
		require.Equal(t, detectedErrs, namedErrs, "%s named %q", filepath.Base(file), name)
		compared++
	}
	assert.Greater(t, compared, len(agents)/2)
}

// An agent that says its name again without a version (restarted as
// another build, which gives none) is no longer the build the first
// initialize named: the dialect reads the newest rules, and revisions
// carry no version.
func TestAgentVersionForgottenByAnUnversionedInitialize(t *testing.T) {
	last := lastOf(t, normalize.New(), initOpencode,
		`{"jsonrpc":"2.0","id":5,"result":{"protocolVersion":1,"agentInfo":{"name":"opencode"}}}`,
		openCall, endCall)
	assert.Empty(t, last.AgentVersion)
}

// lastOf feeds frames to session "s" of n and returns the last revision.
func lastOf(t *testing.T, n *normalize.Normalizer, frames ...string) *normalize.ShellExec {
	t.Helper()
	var last *normalize.ShellExec
	for _, f := range frames {
		out, err := n.Feed("s", []byte(f))
		require.NoError(t, err)
		if len(out) > 0 {
			last = out[len(out)-1]
		}
	}
	require.NotNil(t, last)
	return last
}

// An adapter whose agentInfo.version is its own build (pi-acp 0.0.34)
// names the build of the agent behind it in its session/new result
// (pi's, "pi v0.84.4"): revisions carry that build, and the dialect reads
// it as that build. pi before 0.86.1 reports a shell a signal killed as a
// success, and pi-acp 0.0.34 sends terminal_exit 0 for it: no exit code.
func TestAgentVersionNamedByTheAdapter(t *testing.T) {
	upd := func(u string) string {
		return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":` + u + `}}`
	}
	frames := []string{
		`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"pi-acp","title":"pi ACP adapter","version":"0.0.34"}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"x","_meta":{"piAcp":{"startupInfo":"pi v0.84.4\n---\n"}}}}`,
		upd(`{"sessionUpdate":"tool_call","toolCallId":"k1","title":"echo before-kill; kill -9 $$","kind":"execute","status":"pending","content":[{"type":"terminal","terminalId":"k1"}],"_meta":{"terminal_info":{"terminal_id":"k1","cwd":"/w"}}}`),
		upd(`{"sessionUpdate":"tool_call_update","toolCallId":"k1","status":"in_progress","_meta":{"terminal_output":{"terminal_id":"k1","data":"before-kill\n"}}}`),
		upd(`{"sessionUpdate":"tool_call_update","toolCallId":"k1","status":"completed","_meta":{"terminal_exit":{"terminal_id":"k1","exit_code":0,"signal":null}}}`),
	}
	last := lastOf(t, normalize.New(), frames...)
	assert.Equal(t, "pi", last.Dialect)
	assert.Equal(t, "pi v0.84.4", last.AgentVersion)
	assert.Nil(t, last.ExitCode)
	assert.Equal(t, normalize.Unknown, last.Outcome)
	require.NotNil(t, last.Output)
	assert.Equal(t, "before-kill\n", last.Output.Text)

	// Without the adapter's word, pi's build is unknown: pi-acp's own
	// build on revisions, the newest rules (exit 0).
	last = lastOf(t, normalize.New(), append(frames[:1:1], frames[2:]...)...)
	assert.Equal(t, "0.0.34", last.AgentVersion)
	require.NotNil(t, last.ExitCode)
	assert.Equal(t, int32(0), *last.ExitCode)
}

// The build an adapter named outlives the adapter's next initialize: a
// client that reconnects starts the adapter again and loads the session,
// and pi-acp's initialize result gives its own build again while its
// session/load result names none of pi's (startupInfo null, as recorded).
// Read as pi-acp's build, the newest rules would take pi 0.84.4's
// terminal_exit 0 for a killed shell as a real exit 0.
func TestAgentVersionNamedByTheAdapterSurvivesAReconnect(t *testing.T) {
	upd := func(u string) string {
		return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":` + u + `}}`
	}
	initialize := `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"pi-acp","title":"pi ACP adapter","version":"0.0.34"}}}`
	killed := func(id string) []string {
		return []string{
			upd(`{"sessionUpdate":"tool_call","toolCallId":"` + id + `","title":"echo before-kill; kill -9 $$","kind":"execute","status":"pending","content":[{"type":"terminal","terminalId":"` + id + `"}],"_meta":{"terminal_info":{"terminal_id":"` + id + `","cwd":"/w"}}}`),
			upd(`{"sessionUpdate":"tool_call_update","toolCallId":"` + id + `","status":"completed","_meta":{"terminal_exit":{"terminal_id":"` + id + `","exit_code":0,"signal":null}}}`),
		}
	}
	first := append([]string{initialize,
		`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"x","_meta":{"piAcp":{"startupInfo":"pi v0.84.4\n---\n"}}}}`,
	}, killed("k1")...)
	again := append([]string{initialize,
		`{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"x","cwd":"/w","mcpServers":[]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"_meta":{"piAcp":{"startupInfo":null}}}}`,
	}, killed("k2")...)
	check := func(t *testing.T, last *normalize.ShellExec) {
		t.Helper()
		assert.Equal(t, "k2", last.ToolCallID)
		assert.Equal(t, "pi v0.84.4", last.AgentVersion)
		assert.Nil(t, last.ExitCode, "pi before 0.86.1 says exit 0 for a killed shell")
		assert.Equal(t, normalize.Unknown, last.Outcome)
	}
	t.Run("same process", func(t *testing.T) {
		check(t, lastOf(t, normalize.New(), append(first, again...)...))
	})
	t.Run("restored from the store", func(t *testing.T) {
		st := store.NewMemory()
		lastOf(t, normalize.New(normalize.WithStore(st)), first...)
		check(t, lastOf(t, normalize.New(normalize.WithStore(st)), again...))
	})
}

// A version text's program name is a program's name, and the version an
// embedding program is told of is plain text: a name of other characters
// makes the version unknown, and the label Hooks.Unrecognized gets is
// valid UTF-8 (a metrics library refuses anything else).
func TestAgentVersionLabelIsPlain(t *testing.T) {
	var labels []string
	n := normalize.New(normalize.WithHooks(normalize.Hooks{Unrecognized: func(_, v, _ string) {
		labels = append(labels, v)
	}}))
	future := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"output":"boom\n","metadata":{"exit_status":3}}}}}`
	last := lastOf(t, n,
		`{"jsonrpc":"2.0","id":0,"result":{"agentInfo":{"name":"opencode","version":"日日日日日日日日日日日 1.0.0"}}}`,
		openCall, future)
	assert.Equal(t, "日日日日日日日日日日日 1.0.0", last.AgentVersion, "the text as sent")
	require.Len(t, labels, 1)
	assert.Equal(t, "unknown", labels[0])
}

// An agent's name and build come from the agent: a frame the client sent
// that reads like an initialize result (a client answering a request of
// the agent's with such a result, or a hostile one) neither picks the
// dialect nor binds the build; the same frame from the agent does both.
func TestAgentVersionOnlyFromTheAgent(t *testing.T) {
	for _, tc := range []struct {
		dir              normalize.Direction
		dialect, version string
	}{
		{normalize.FromClient, "generic", ""},
		{normalize.FromAgent, "opencode", "1.2.3"},
		{normalize.DirectionUnknown, "opencode", "1.2.3"},
	} {
		n := normalize.New()
		_, err := n.Feed("s", []byte(initOpencode), normalize.WithDirection(tc.dir))
		require.NoError(t, err)
		last := lastOf(t, n, openCall, endCall)
		assert.Equal(t, tc.dialect, last.Dialect, "direction %v", tc.dir)
		assert.Equal(t, tc.version, last.AgentVersion, "direction %v", tc.dir)
	}
}

// Once an initialize result named the agent, an agentInfo in another
// result (a session/new result a wrapper or proxy fills in: ACP's carries
// no protocolVersion) neither renames the agent nor changes its build. An
// initialize result again (an agent restarted as another) does.
func TestAgentInfoOutsideInitializeKeepsTheAgent(t *testing.T) {
	n := normalize.New()
	feed := func(f string) []*normalize.ShellExec {
		out, err := n.Feed("s", []byte(f))
		require.NoError(t, err)
		return out
	}
	feed(initOpencode)
	feed(`{"jsonrpc":"2.0","id":1,"result":{"sessionId":"x","agentInfo":{"name":"gemini-cli","version":"0.55.1"}}}`)
	out := feed(openCall)
	require.Len(t, out, 1)
	assert.Equal(t, "opencode", out[0].Dialect)
	assert.Equal(t, "1.2.3", out[0].AgentVersion)

	feed(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"opencode","version":"1.3.0"}}}`)
	out = feed(endCall)
	require.Len(t, out, 1)
	assert.Equal(t, "1.3.0", out[0].AgentVersion)

	// A result without protocolVersion still names an agent not named
	// yet (traces written by hand often leave it out).
	m := normalize.New()
	_, err := m.Feed("t", []byte(`{"jsonrpc":"2.0","id":0,"result":{"agentInfo":{"name":"opencode","version":"1.2.3"}}}`))
	require.NoError(t, err)
	out, err = m.Feed("t", []byte(openCall))
	require.NoError(t, err)
	require.Len(t, out, 1)
	assert.Equal(t, "opencode", out[0].Dialect)
	assert.Equal(t, "1.2.3", out[0].AgentVersion)
}
