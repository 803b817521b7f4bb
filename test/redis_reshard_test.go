package test

import (
	"context"
	"encoding/base64"
	"net"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"

	"github.com/acpnorm/acpnorm/internal/testredis"
)

// resharder moves one slot of a Redis Cluster to another master the way
// redis-cli --cluster reshard does, one step at a time: SETSLOT IMPORTING
// on the target and MIGRATING on the source, then one MIGRATE of one key
// per step, then SETSLOT NODE on the target, the source and the other
// masters.
type resharder struct {
	t                *testing.T
	c                *testredis.Cluster
	slot             int64
	src, dst         *redis.Client
	dstID            string
	dstHost, dstPort string
	srcAddr, dstAddr string
	moved            int
	done             bool
	clients          []*redis.Client
}

// reshard starts moving the slot of key from its master to another.
func reshard(t *testing.T, c *testredis.Cluster, key string) *resharder {
	t.Helper()
	ctx := context.Background()
	r := &resharder{t: t, c: c}
	masters := c.Masters()
	nodes := map[string]*redis.Client{}
	for _, m := range masters {
		cl := redis.NewClient(&redis.Options{Addr: m.Addr})
		r.clients = append(r.clients, cl)
		nodes[m.Addr] = cl
	}
	t.Cleanup(func() {
		for _, cl := range r.clients {
			_ = cl.Close()
		}
	})
	seed := nodes[masters[0].Addr]
	var err error
	if r.slot, err = seed.ClusterKeySlot(ctx, key).Result(); err != nil {
		t.Fatal(err)
	}
	shards, err := seed.ClusterShards(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, sh := range shards {
		for _, s := range sh.Slots {
			for _, n := range sh.Nodes {
				if s.Start <= r.slot && r.slot <= s.End && n.Role == "master" {
					r.srcAddr = net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10))
				}
			}
		}
	}
	for i, m := range masters {
		if m.Addr == r.srcAddr {
			r.dstAddr = masters[(i+1)%len(masters)].Addr
		}
	}
	if r.srcAddr == "" || r.dstAddr == "" {
		t.Fatalf("slot %d: no master serves it (%v)", r.slot, shards)
	}
	r.src, r.dst = nodes[r.srcAddr], nodes[r.dstAddr]
	srcID := r.do(r.src, "CLUSTER", "MYID")
	r.dstID = r.do(r.dst, "CLUSTER", "MYID")
	r.dstHost, r.dstPort, _ = net.SplitHostPort(r.dstAddr)
	r.do(r.dst, "CLUSTER", "SETSLOT", r.slot, "IMPORTING", srcID)
	r.do(r.src, "CLUSTER", "SETSLOT", r.slot, "MIGRATING", r.dstID)
	return r
}

func (r *resharder) do(c *redis.Client, args ...any) string {
	r.t.Helper()
	v, err := c.Do(context.Background(), args...).Text()
	if err != nil {
		r.t.Fatalf("%v on %s: %v", args, c.Options().Addr, err)
	}
	return v
}

// step moves one more key of the slot; it reports false when none is
// left on the source.
func (r *resharder) step() bool {
	r.t.Helper()
	keys, err := r.src.ClusterGetKeysInSlot(context.Background(), int(r.slot), 1).Result()
	if err != nil {
		r.t.Fatal(err)
	}
	if len(keys) == 0 {
		return false
	}
	// BUSYKEY here would mean acpnormd wrote on the target a key the
	// source still held.
	r.do(r.src, "MIGRATE", r.dstHost, r.dstPort, keys[0], 0, 5000)
	r.moved++
	return true
}

// finish ends the move: the slot is the target's on every master.
func (r *resharder) finish() {
	r.t.Helper()
	if r.done {
		return
	}
	order := []*redis.Client{r.dst, r.src}
	for _, cl := range r.clients {
		if cl != r.src && cl != r.dst {
			order = append(order, cl)
		}
	}
	for _, cl := range order {
		r.do(cl, "CLUSTER", "SETSLOT", r.slot, "NODE", r.dstID)
	}
	r.done = true
}

// playRestResharding plays the rest of every recording on new streams
// to a second acpnormd, as playRest does, while the slot of the
// recording's session moves to another master: the first frame meets
// the slot migrating with no key moved; then one key moves before every
// other frame, and before every frame sent again (answered UNAVAILABLE:
// the session's keys split between the two masters); once every key has
// moved, two frames are applied with the slot still importing (the old
// master answers ASK), and the move ends (SETSLOT NODE) before the rest.
// It returns how many frames were answered UNAVAILABLE and how many keys
// moved.
func (run *storeRun) playRestResharding(t *testing.T, to *replica, c *testredis.Cluster, prefix string) (unavailable, moved int) {
	t.Helper()
	for i, rec := range run.recs {
		fd := openFeed(t, to)
		fd.options(t, skipApplied)
		run.feeds[i] = fd
		r := reshard(t, c, prefix+"{"+base64.RawURLEncoding.EncodeToString([]byte(rec.name))+"}")
		frames, left, afterMoved := 0, true, 0
		last := rec.lines[len(rec.lines)-1].Number
		for _, l := range rec.lines[run.cuts[i]:] {
			sends := 0
			got, n := untilApplied(t, fd, uint64(l.Number), func() {
				if left && (sends > 0 || frames%2 == 1) {
					left = r.step()
				}
				sends++
				fd.send(t, rec.name, l)
			})
			run.got[i] = append(run.got[i], got...)
			unavailable += n
			frames++
			if !left {
				if afterMoved++; afterMoved == 2 {
					r.finish()
				}
			}
		}
		for left {
			left = r.step()
		}
		r.finish()
		moved += r.moved
		got, n := untilApplied(t, fd, uint64(last+1), func() { fd.closeSession(t, rec.name, uint64(last+1)) })
		run.got[i] = append(run.got[i], got...)
		unavailable += n
		assert.Positive(t, r.moved, "%s: no key of the session's slot moved", rec.name)
	}
	for _, fd := range run.feeds {
		assert.Empty(t, fd.finish(t), "responses after the last barrier")
	}
	return unavailable, moved
}
