package normalize

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/internal/dialect"
	"github.com/acpnorm/acpnorm/internal/wire"
	"github.com/acpnorm/acpnorm/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sessionOf returns the session id of the default namespace.
func sessionOf(t *testing.T, n *Normalizer, id string) *session {
	t.Helper()
	n.ss.mu.Lock()
	defer n.ss.mu.Unlock()
	sp := n.ss.spaces[""]
	require.NotNil(t, sp)
	s := sp.all[id]
	require.NotNil(t, s)
	return s
}

const initAt = `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"opencode","version":"0.9.4-beta.2"}}}`

// A session whose initialize says its build reads with its dialect bound
// to that build: detected, named on every frame, named only after the
// initialize, or restored from the store.
func TestSessionDialectBoundToBuild(t *testing.T) {
	want := dialect.ParseVersion("0.9.4-beta.2")
	check := func(n *Normalizer, how string) {
		s := sessionOf(t, n, "s")
		assert.Equal(t, "opencode", s.name, how)
		assert.Equal(t, want, dialect.VersionOf(s.dialect), how)
		assert.Equal(t, "opencode", dialect.Unbound(s.dialect).Info().Name, how)
	}
	open := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","update":{"sessionUpdate":"tool_call","toolCallId":"c1","kind":"execute","rawInput":{"command":"ls"}}}}`)

	n := New()
	_, err := n.Feed("s", []byte(initAt))
	require.NoError(t, err)
	check(n, "detected")

	n = New()
	for _, f := range [][]byte{[]byte(initAt), open} {
		_, err := n.Feed("s", f, WithDialect("opencode"))
		require.NoError(t, err)
	}
	check(n, "named on every frame")
	s := sessionOf(t, n, "s")
	before := s.dialect
	_, err = n.Feed("s", open, WithDialect("opencode"))
	require.NoError(t, err)
	assert.Equal(t, before, s.dialect, "a dialect named again keeps its binding")

	n = New()
	_, err = n.Feed("s", open, WithDialect("opencode"))
	require.NoError(t, err)
	assert.False(t, dialect.VersionOf(sessionOf(t, n, "s").dialect).Known(), "no build said yet")
	_, err = n.Feed("s", []byte(initAt))
	require.NoError(t, err)
	check(n, "named before the initialize")

	st := store.NewMemory()
	n = New(WithStore(st))
	_, err = n.Feed("s", []byte(initAt))
	require.NoError(t, err)
	m := New(WithStore(st))
	_, err = m.Feed("s", open)
	require.NoError(t, err)
	check(m, "restored from the store")
}

// A session header of format 2 (before the agent's version was kept) is
// still read: the session has no build.
func TestStoredHeaderFormat2(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	n := New(WithStore(st))
	_, err := n.Feed("s", []byte(initAt))
	require.NoError(t, err)
	snap, err := st.Load(ctx, "s")
	require.NoError(t, err)
	body := sessionOf(t, n, "s").body
	require.Equal(t, byte(5), body[0])
	version := wire.AppendString(wire.AppendString(nil, "0.9.4-beta.2"), "") // and no client
	version = wire.AppendUvarint(version, 0)                                 // nor closed
	require.True(t, bytes.HasSuffix(body, version))
	v2 := append([]byte{2}, body[1:len(body)-len(version)]...)
	v2 = append(v2, snap.Header[len(body):]...) // when last used

	old := store.NewMemory()
	_, err = old.Commit(ctx, "s", 0, &store.Change{Header: v2, TTL: time.Hour})
	require.NoError(t, err)
	m := New(WithStore(old))
	_, err = m.Feed("s", []byte(`{"jsonrpc":"2.0","method":"session/cancel","params":{}}`))
	require.NoError(t, err)
	s := sessionOf(t, m, "s")
	assert.Equal(t, "opencode", s.name, "the dialect of a format 2 header")
	assert.False(t, s.agent.Known())
	assert.False(t, dialect.VersionOf(s.dialect).Known())
}

// A session header of format 3 (before the client's capabilities were
// kept) is still read: the session keeps its build and has no client.
func TestStoredHeaderFormat3(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	n := New(WithStore(st))
	client := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"clientCapabilities":{"_meta":{"jetbrains":{"air":{}}}}}}`
	_, err := n.Feed("s", []byte(client), WithDirection(FromClient))
	require.NoError(t, err)
	_, err = n.Feed("s", []byte(initAt), WithDirection(FromAgent))
	require.NoError(t, err)
	snap, err := st.Load(ctx, "s")
	require.NoError(t, err)
	s := sessionOf(t, n, "s")
	require.Equal(t, `{"_meta":{"jetbrains":{"air":{}}}}`, s.client.Raw())
	assert.Equal(t, s.client, dialect.ClientOf(s.dialect))
	body := s.body
	require.Equal(t, byte(5), body[0])
	caps := wire.AppendUvarint(wire.AppendString(nil, s.client.Raw()), 0) // not closed
	require.True(t, bytes.HasSuffix(body, caps))
	v3 := append([]byte{3}, body[1:len(body)-len(caps)]...)
	v3 = append(v3, snap.Header[len(body):]...) // when last used
	v4 := append([]byte{4}, body[1:len(body)-1]...)
	v4 = append(v4, snap.Header[len(body):]...)

	for _, tc := range []struct {
		name   string
		header []byte
		client string
	}{
		{"format 3", v3, ""},
		{"format 4", v4, `{"_meta":{"jetbrains":{"air":{}}}}`},
		{"format 5", snap.Header, `{"_meta":{"jetbrains":{"air":{}}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := store.NewMemory()
			_, err = old.Commit(ctx, "s", 0, &store.Change{Header: tc.header, TTL: time.Hour})
			require.NoError(t, err)
			m := New(WithStore(old))
			_, err = m.Feed("s", []byte(`{"jsonrpc":"2.0","method":"session/cancel","params":{}}`))
			require.NoError(t, err)
			s := sessionOf(t, m, "s")
			assert.Equal(t, "opencode", s.name)
			assert.Equal(t, dialect.ParseVersion("0.9.4-beta.2"), dialect.VersionOf(s.dialect))
			assert.Equal(t, tc.client, s.client.Raw())
			assert.Equal(t, tc.client, dialect.ClientOf(s.dialect).Raw())
		})
	}
}

// A session header of format 5 keeps the highest sequence a closed
// session had applied; one of format 4 (before it was kept) is still
// read, as a session not closed: a frame sent again after the close is
// applied afresh, as that build did.
func TestStoredHeaderFormat4(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	n := New(WithStore(st))
	for i, f := range []string{initAt, `{"jsonrpc":"2.0","method":"session/cancel","params":{}}`} {
		_, err := n.Feed("s", []byte(f), WithSequence(uint64(i+1)), WithSkipApplied())
		require.NoError(t, err)
	}
	_, err := n.CloseSession("s", WithSequence(3), WithSkipApplied())
	require.NoError(t, err)
	snap, err := st.Load(ctx, "s")
	require.NoError(t, err)
	m := New(WithStore(st))
	var again []*FrameError
	_, err = m.TurnEnded("s", false, WithSequence(3), WithSkipApplied(), WithEmit(func(ev Event) error {
		again = append(again, ev.Error)
		return nil
	}))
	require.NoError(t, err)
	assert.Empty(t, again, "the close sent again: its kept answer, which is nothing")
	s, err := m.ss.lock(ctx, m.ns, "s", false) // loaded from the store: answered, it left the cache
	require.NoError(t, err)
	require.NotNil(t, s)
	s.unlock()
	require.Equal(t, uint64(3), s.closed, "format 5 keeps it")
	body := s.body
	require.Equal(t, byte(5), body[0])
	require.Equal(t, byte(3), body[len(body)-1])
	v4 := append([]byte{4}, body[1:len(body)-1]...)
	v4 = append(v4, snap.Header[len(body):]...) // when last used

	old := store.NewMemory()
	_, err = old.Commit(ctx, "s", 0, &store.Change{Header: v4, TTL: time.Hour})
	require.NoError(t, err)
	o := New(WithStore(old))
	var errs []*FrameError
	_, err = o.Feed("s", []byte(`{"jsonrpc":"2.0","method":"session/cancel","params":{}}`), WithSequence(2), WithSkipApplied(),
		WithEmit(func(ev Event) error {
			if ev.Error != nil {
				errs = append(errs, ev.Error)
			}
			return nil
		}))
	require.NoError(t, err)
	assert.Empty(t, errs, "applied afresh")
	s = sessionOf(t, o, "s")
	assert.Zero(t, s.closed)
	assert.Equal(t, uint64(2), s.applied)
}
