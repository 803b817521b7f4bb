package testredis

import (
	"context"
	"net"
	"slices"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
)

// SlotMove moves one slot of a Cluster from its master to another, the
// way redis-cli --cluster reshard does, one step at a time: Start
// (SETSLOT IMPORTING on the target, MIGRATING on the source), Migrate of
// one key at a time, then Finish (SETSLOT NODE on the target, the source
// and the other masters). A failed step fails the test.
type SlotMove struct {
	Slot     int
	From, To string // the source's and the target's addresses

	t                testing.TB
	src, dst         *redis.Client
	srcID, dstID     string
	dstHost, dstPort string
	masters          []*redis.Client
	done             bool
}

// MoveSlot prepares to move the slot of key from the master that serves
// it to the next master; nothing moves before Start.
func (c *Cluster) MoveSlot(t testing.TB, key string) *SlotMove {
	t.Helper()
	ctx := context.Background()
	m := &SlotMove{t: t}
	masters := c.Masters()
	nodes := map[string]*redis.Client{}
	for _, s := range masters {
		cl := redis.NewClient(&redis.Options{Addr: s.Addr})
		t.Cleanup(func() { _ = cl.Close() })
		nodes[s.Addr] = cl
		m.masters = append(m.masters, cl)
	}
	seed := m.masters[0]
	slot, err := seed.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatalf("testredis: CLUSTER KEYSLOT: %v", err)
	}
	m.Slot = int(slot)
	shards, err := seed.ClusterShards(ctx).Result()
	if err != nil {
		t.Fatalf("testredis: CLUSTER SHARDS: %v", err)
	}
	// Each shard's master, by address: its node id, and the one that
	// serves the slot.
	ids := map[string]string{}
	for _, sh := range shards {
		i := slices.IndexFunc(sh.Nodes, func(n redis.Node) bool { return n.Role == "master" })
		if i < 0 {
			continue
		}
		n := sh.Nodes[i]
		addr := net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10))
		ids[addr] = n.ID
		if slices.ContainsFunc(sh.Slots, func(r redis.SlotRange) bool { return r.Start <= slot && slot <= r.End }) {
			m.From = addr
		}
	}
	for i, s := range masters {
		if s.Addr == m.From {
			m.To = masters[(i+1)%len(masters)].Addr
		}
	}
	m.srcID, m.dstID = ids[m.From], ids[m.To]
	if m.srcID == "" || m.dstID == "" {
		t.Fatalf("testredis: slot %d: no master serves it, or no other master to move it to (%v)", slot, shards)
	}
	m.src, m.dst = nodes[m.From], nodes[m.To]
	m.dstHost, m.dstPort, _ = net.SplitHostPort(m.To)
	return m
}

func (m *SlotMove) do(c *redis.Client, args ...any) string {
	m.t.Helper()
	v, err := c.Do(context.Background(), args...).Text()
	if err != nil {
		m.t.Fatalf("testredis: %v on %s: %v", args, c.Options().Addr, err)
	}
	return v
}

// Start sets the slot importing on the target and migrating on the
// source.
func (m *SlotMove) Start() {
	m.t.Helper()
	m.do(m.dst, "CLUSTER", "SETSLOT", m.Slot, "IMPORTING", m.srcID)
	m.do(m.src, "CLUSTER", "SETSLOT", m.Slot, "MIGRATING", m.dstID)
}

// Keys returns up to n keys of the slot still on the source.
func (m *SlotMove) Keys(n int) []string {
	m.t.Helper()
	keys, err := m.src.ClusterGetKeysInSlot(context.Background(), m.Slot, n).Result()
	if err != nil {
		m.t.Fatalf("testredis: CLUSTER GETKEYSINSLOT: %v", err)
	}
	return keys
}

// Migrate moves key to the target. BUSYKEY fails it: something wrote on
// the target a key the source still held.
func (m *SlotMove) Migrate(key string) {
	m.t.Helper()
	m.do(m.src, "MIGRATE", m.dstHost, m.dstPort, key, 0, 5000)
}

// Finish ends the move: the slot is the target's on every master (the
// target first, then the source, then the others). Once done it does
// nothing.
func (m *SlotMove) Finish() {
	m.t.Helper()
	if m.done {
		return
	}
	order := []*redis.Client{m.dst, m.src}
	for _, c := range m.masters {
		if c != m.src && c != m.dst {
			order = append(order, c)
		}
	}
	for _, c := range order {
		m.do(c, "CLUSTER", "SETSLOT", m.Slot, "NODE", m.dstID)
	}
	m.done = true
}

// Counts returns how many keys of the slot the source and the target
// hold.
func (m *SlotMove) Counts() (source, target int64) {
	m.t.Helper()
	ctx := context.Background()
	var err error
	if source, err = m.src.ClusterCountKeysInSlot(ctx, m.Slot).Result(); err == nil {
		target, err = m.dst.ClusterCountKeysInSlot(ctx, m.Slot).Result()
	}
	if err != nil {
		m.t.Fatalf("testredis: CLUSTER COUNTKEYSINSLOT: %v", err)
	}
	return source, target
}
