package redisstore

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"github.com/stretchr/testify/assert"
)

// An ASK names its node as Redis writes it; an IPv6 one has no brackets,
// which a dialer needs.
func TestAskAddr(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:7001":     "127.0.0.1:7001",
		"redis-2:6379":       "redis-2:6379",
		"fe80::1:6379":       "[fe80::1]:6379",
		"::1:7001":           "[::1]:7001",
		"[2001:db8::7]:6380": "[2001:db8::7]:6380",
		"2001:db8::7:6380":   "[2001:db8::7]:6380",
		"node.example:16379": "node.example:16379",
		"no-port":            "no-port",
	} {
		assert.Equal(t, want, askAddr(in), in)
	}
}

// A client for an ASK has the node clients' options at its own address,
// and its own copy of them (go-redis's NewClient copies the maintenance
// configuration it then changes). A closed store makes no client for an
// ASK: a commit that meets one after Close has no connection to leak.
func TestAskClientAfterClose(t *testing.T) {
	s := &Store{c: redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})}
	mc := &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	s.nodeOptions.Store(&redis.Options{Addr: "127.0.0.1:1", MaintNotificationsConfig: mc})
	c := s.askClient("127.0.0.1:2")
	if assert.NotNil(t, c) {
		assert.Equal(t, "127.0.0.1:2", c.Options().Addr)
		assert.Equal(t, maintnotifications.ModeDisabled, c.Options().MaintNotificationsConfig.Mode)
		assert.NotSame(t, mc, c.Options().MaintNotificationsConfig)
	}
	assert.Equal(t, maintnotifications.Config{Mode: maintnotifications.ModeDisabled}, *mc, "the template is left as it was")
	assert.Same(t, c, s.askClient("127.0.0.1:2"), "one client per node")
	assert.NoError(t, s.Close())
	assert.Nil(t, s.askClient("127.0.0.1:3"))
}
