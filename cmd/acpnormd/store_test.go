package main

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpnorm/acpnorm/internal/testredis"
)

// openStore warns when Redis would evict acpnorm's keys: every key the
// store writes has an expiry, so under a volatile-* policy as under an
// allkeys-* one a full Redis evicts parts of live sessions. noeviction
// gets no warning, and a Redis that refuses CONFIG (as managed ones often
// do) opens all the same, with a note that the policy could not be read.
func TestOpenStoreWarnsOfEviction(t *testing.T) {
	open := func(t *testing.T, args ...string) string {
		t.Helper()
		srv := testredis.StartServer(t, args...)
		var logged strings.Builder
		st, err := openStore(srv.URL, 0, time.Second, slog.New(slog.NewTextHandler(&logged, nil)))
		require.NoError(t, err)
		require.NotNil(t, st)
		t.Cleanup(func() { st.(io.Closer).Close() })
		return logged.String()
	}
	for _, policy := range []string{"volatile-lru", "volatile-ttl", "volatile-random", "allkeys-lru", "allkeys-lfu"} {
		t.Run(policy, func(t *testing.T) {
			log := open(t, "--maxmemory-policy", policy)
			assert.Contains(t, log, "level=WARN")
			assert.Contains(t, log, "maxmemory_policy="+policy)
			assert.Contains(t, log, "noeviction")
		})
	}
	t.Run("noeviction", func(t *testing.T) {
		log := open(t, "--maxmemory-policy", "noeviction")
		assert.NotContains(t, log, "maxmemory_policy", "%s", log)
		assert.NotContains(t, log, "level=WARN", "%s", log)
	})
	t.Run("CONFIG refused", func(t *testing.T) {
		log := open(t, "--maxmemory-policy", "allkeys-lru", "--rename-command", "CONFIG", "config-renamed-away")
		assert.NotContains(t, log, "level=WARN", "%s", log)
		assert.Contains(t, log, "could not read", "%s", log)
	})
}
