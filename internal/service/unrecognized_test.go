package service

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/normalize"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A wire change is counted in acpnorm_unrecognized_total by dialect,
// agent build and kind, with no text of the frame in a label.
func TestUnrecognizedCounted(t *testing.T) {
	reg := prometheus.NewRegistry()
	svc, err := New(DefaultConfig(), NewMetrics(reg), nil)
	require.NoError(t, err)
	d := &direct{t: t, ss: svc.sessions}
	d.ss.now = func() time.Time { return time.Unix(1000, 0) }
	d.frame("s", `{"jsonrpc":"2.0","id":0,"result":{"agentInfo":{"name":"opencode","version":"1.99.0"}}}`)
	d.exec("s", `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","status":"pending","rawInput":{"command":"make"}}}}`)
	x := d.exec("s", `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"output":"boom\n","metadata":{"exit_status":3,"stdout_text":"secret output line\n"}}}}}`)
	assert.Nil(t, x.ExitCode, "the exit is not inferred")
	m := svc.sessions.m.unrecognized
	assert.Equal(t, 1.0, testutil.ToFloat64(m.WithLabelValues("opencode", "1.99.0", normalize.UnrecognizedExitField)))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.WithLabelValues("opencode", "1.99.0", normalize.UnrecognizedOutputField)))
	n, err := testutil.GatherAndCount(reg, "acpnorm_unrecognized_total")
	require.NoError(t, err)
	assert.Equal(t, 2, n)
}

// showWireChange feeds, in namespace ns of n, a session of an agent of
// build version whose shell call ends with an exit field no dialect reads.
func showWireChange(t *testing.T, n *normalize.Normalizer, ns, sid, version string) {
	t.Helper()
	v := n.Namespace(ns)
	_, err := v.Feed(sid, []byte(`{"jsonrpc":"2.0","id":0,"result":{"agentInfo":{"name":"opencode","version":"`+version+`"}}}`))
	require.NoError(t, err)
	_, err = v.Feed(sid, []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","status":"pending","rawInput":{"command":"make"}}}}`))
	require.NoError(t, err)
	_, err = v.Feed(sid, []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"metadata":{"exit_status":3}}}}}`))
	require.NoError(t, err)
}

// The agent_version label has at most maxVersionLabels values, and one
// identity's made-up builds do not take them all from the others: a
// build another identity's session shows later still gets its own value.
func TestUnrecognizedVersionsFair(t *testing.T) {
	m := NewMetrics(nil)
	n := normalize.New(normalize.WithHooks(m.hooks()))
	for i := range maxVersionLabels + 10 {
		showWireChange(t, n, "evil", fmt.Sprintf("e%d", i), fmt.Sprintf("9.9.%d", i))
	}
	count := func(version string) float64 {
		return testutil.ToFloat64(m.unrecognized.WithLabelValues("opencode", version, normalize.UnrecognizedExitField))
	}
	assert.Equal(t, 10.0, count(otherVersion), "one identity alone may use every value")
	for i := range 4 {
		showWireChange(t, n, "good", fmt.Sprintf("g%d", i), fmt.Sprintf("1.2.%d", i))
	}
	for i := range 4 {
		assert.Equal(t, 1.0, count(fmt.Sprintf("1.2.%d", i)), "a real build of another identity")
	}
	assert.Equal(t, 10.0, count(otherVersion))
	showWireChange(t, n, "evil", "e-late", "9.9.999")
	assert.Equal(t, 11.0, count(otherVersion), "an identity over its share gets no new value")
	assert.LessOrEqual(t, testutil.CollectAndCount(m.unrecognized), maxVersionLabels+1)
	// The made-up builds gave up their least recently used values (a
	// series deleted is not there to delete again).
	for i := range 4 {
		assert.False(t, m.unrecognized.DeleteLabelValues("opencode", fmt.Sprintf("9.9.%d", i), normalize.UnrecognizedExitField), "9.9.%d kept", i)
	}
	assert.True(t, m.unrecognized.DeleteLabelValues("opencode", "9.9.4", normalize.UnrecognizedExitField))
}

// The agent_version label has at most maxVersionLabels values.
func TestUnrecognizedVersionsBounded(t *testing.T) {
	m := NewMetrics(nil)
	h := m.hooks()
	for i := range maxVersionLabels + 10 {
		h.UnrecognizedIn("", "generic", fmt.Sprintf("1.0.%d", i), normalize.UnrecognizedExitField)
	}
	assert.Equal(t, 1.0, testutil.ToFloat64(m.unrecognized.WithLabelValues("generic", "1.0.0", normalize.UnrecognizedExitField)))
	assert.Equal(t, 10.0, testutil.ToFloat64(m.unrecognized.WithLabelValues("generic", otherVersion, normalize.UnrecognizedExitField)))
	assert.Equal(t, maxVersionLabels+1, testutil.CollectAndCount(m.unrecognized))
}

// A wire change is logged once by the process, naming the dialect, the
// build, what and the field (never its value); a second session showing
// the same change is counted, not logged again. The log remembers at
// most maxWireChanges changes and says once when it stops.
func TestWireChangeLogged(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	reg := prometheus.NewRegistry()
	svc, err := New(DefaultConfig(), NewMetrics(reg), log)
	require.NoError(t, err)
	d := &direct{t: t, ss: svc.sessions}
	d.ss.now = func() time.Time { return time.Unix(1000, 0) }
	for _, s := range []string{"a", "b"} {
		d.frame(s, `{"jsonrpc":"2.0","id":0,"result":{"agentInfo":{"name":"opencode","version":"1.99.0"}}}`)
		d.exec(s, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","status":"pending","rawInput":{"command":"make"}}}}`)
		d.exec(s, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":{"output":"boom\n","metadata":{"exit_status":3}}}}}`)
	}
	assert.Equal(t, 2.0, testutil.ToFloat64(svc.sessions.m.unrecognized.WithLabelValues("opencode", "1.99.0", normalize.UnrecognizedExitField)), "two sessions")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 1, buf.String())
	var line map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &line))
	assert.Equal(t, "WARN", line["level"])
	assert.Equal(t, "opencode", line["dialect"])
	assert.Equal(t, "1.99.0", line["agent_version"])
	assert.Equal(t, normalize.UnrecognizedExitField, line["what"])
	assert.Equal(t, "rawOutput.metadata.exit_status", line["field"])
	assert.NotContains(t, buf.String(), "boom")

	buf.Reset()
	w := newWireLog(log)
	for i := range maxWireChanges + 5 {
		w.changed("generic", "1.0.0", normalize.UnrecognizedExitField, fmt.Sprintf("rawOutput.f%d", i))
	}
	lines = strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, maxWireChanges+1)
	assert.Contains(t, lines[maxWireChanges], "logged the first ones")
	assert.Len(t, w.seen, maxWireChanges)
}
