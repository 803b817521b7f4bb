package service

import (
	"fmt"
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

// The agent_version label has at most maxVersionLabels values.
func TestUnrecognizedVersionsBounded(t *testing.T) {
	m := NewMetrics(nil)
	h := m.hooks()
	for i := range maxVersionLabels + 10 {
		h.Unrecognized("generic", fmt.Sprintf("1.0.%d", i), normalize.UnrecognizedExitField)
	}
	assert.Equal(t, 1.0, testutil.ToFloat64(m.unrecognized.WithLabelValues("generic", "1.0.0", normalize.UnrecognizedExitField)))
	assert.Equal(t, 10.0, testutil.ToFloat64(m.unrecognized.WithLabelValues("generic", otherVersion, normalize.UnrecognizedExitField)))
	assert.Equal(t, maxVersionLabels+1, testutil.CollectAndCount(m.unrecognized))
}
