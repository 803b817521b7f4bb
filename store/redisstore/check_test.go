package redisstore

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpnorm/acpnorm/internal/testredis"
	"github.com/acpnorm/acpnorm/store"
)

// A full Redis (maxmemory with noeviction) refuses every commit, a new
// session's as well as an existing one's, and writes nothing: Redis lets
// a script that has already written go on past maxmemory (it cannot stop
// it halfway), so a commit whose first write were one Redis lets through
// when full (DEL) would grow the data set of a full Redis.
func TestFullRedisRefusesEveryCommit(t *testing.T) {
	srv := testredis.StartServer(t, "--maxmemory-policy", "noeviction")
	s := open(t, srv.URL)
	defer s.Close()
	rc := raw(t, srv.URL)
	ctx := t.Context()
	ch := &store.Change{Header: []byte("h"), Records: map[string][]byte{"r": []byte("1")},
		Streams: []store.StreamOp{{Name: "out", Data: []byte("x"), Append: true}}, TTL: time.Hour}
	v, err := s.Commit(ctx, "old", 0, ch)
	require.NoError(t, err)

	require.NoError(t, rc.ConfigSet(ctx, "maxmemory", "1").Err())
	_, err = s.Commit(ctx, "old", v, ch)
	require.Error(t, err, "a commit to an existing session while full")
	assert.Contains(t, err.Error(), "OOM")
	_, err = s.Commit(ctx, "new", 0, ch)
	require.Error(t, err, "a commit that makes a session while full")
	assert.Contains(t, err.Error(), "OOM")
	keys, err := rc.Keys(ctx, "*").Result()
	require.NoError(t, err)
	for _, k := range keys {
		assert.False(t, strings.Contains(k, s.keys("new")[0]), "the refused commit wrote %s", k)
	}
	snap, err := s.Load(ctx, "old")
	require.NoError(t, err)
	assert.Equal(t, v, snap.Version, "the refused commit changed the session")

	require.NoError(t, rc.ConfigSet(ctx, "maxmemory", "0").Err())
	_, err = s.Commit(ctx, "new", 0, ch)
	require.NoError(t, err, "once Redis has room")
}
