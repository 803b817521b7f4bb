package testredis

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of real redis-server processes, created by
// redis-cli --cluster create.
type Cluster struct {
	Nodes []*Server
	URL   string // redis://node1?addr=node2&addr=..., go-redis's cluster form

	t testing.TB
}

// StartCluster starts masters*(1+replicas) cluster nodes (cluster-node-timeout
// nodeTimeout, which bounds how soon a dead master is replaced), makes
// them one cluster with replicas replicas per master, and returns once
// every node says the cluster is ok and every replica is in sync.
func StartCluster(t testing.TB, masters, replicas int, nodeTimeout time.Duration) *Cluster {
	t.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatalf("redis-cli is not on PATH (%v): run bash test/setup.sh, which installs Debian's redis-server and redis-tools", err)
	}
	c := &Cluster{t: t}
	args := []string{"--cluster", "create"}
	for range masters * (1 + replicas) {
		n := startServer(t, true, []string{
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", strconv.FormatInt(nodeTimeout.Milliseconds(), 10),
			// a replica may take over however long it was cut off
			"--cluster-replica-validity-factor", "0",
		})
		c.Nodes = append(c.Nodes, n)
		args = append(args, n.Addr)
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	out, err := exec.Command("redis-cli", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("testredis: redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	c.URL = "redis://" + c.Nodes[0].Addr
	for i, n := range c.Nodes[1:] {
		c.URL += "?&"[min(i, 1):][:1] + "addr=" + n.Addr
	}
	c.WaitHealthy(masters, time.Minute)
	return c
}

// WaitHealthy waits until every running node says cluster_state:ok, the
// cluster has masters masters, all slots are served, and every master's
// running replicas are in sync with it.
func (c *Cluster) WaitHealthy(masters int, timeout time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := c.healthy(masters)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("testredis: the cluster is not healthy within %v: %v", timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (c *Cluster) healthy(masters int) error {
	ctx := context.Background()
	for _, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		cl := redis.NewClient(&redis.Options{Addr: n.Addr, DialTimeout: time.Second, ReadTimeout: time.Second})
		info, err := cl.ClusterInfo(ctx).Result()
		cl.Close()
		if err != nil {
			return err
		}
		f := infoFields(info)
		if f["cluster_state"] != "ok" || f["cluster_slots_ok"] != "16384" || f["cluster_size"] != strconv.Itoa(masters) {
			return fmt.Errorf("%s: %s", n.Addr, info)
		}
	}
	for _, m := range c.Masters() {
		waitReplicas(c.t, m, len(c.ReplicasOf(m)))
	}
	return nil
}

// Masters returns the running nodes that are masters.
func (c *Cluster) Masters() []*Server {
	var ms []*Server
	for _, n := range c.Nodes {
		if n.Running() && role(n.Addr) == "master" {
			ms = append(ms, n)
		}
	}
	return ms
}

// ReplicasOf returns the running nodes that replicate master.
func (c *Cluster) ReplicasOf(master *Server) []*Server {
	var rs []*Server
	for _, n := range c.Nodes {
		if !n.Running() || n == master {
			continue
		}
		cl := redis.NewClient(&redis.Options{Addr: n.Addr, DialTimeout: time.Second, ReadTimeout: time.Second})
		info, err := cl.Info(context.Background(), "replication").Result()
		cl.Close()
		f := infoFields(info)
		if err == nil && f["role"] == "slave" && f["master_port"] == strconv.Itoa(master.port) {
			rs = append(rs, n)
		}
	}
	return rs
}

// Failover makes a replica of master take its place with CLUSTER FAILOVER
// (a manual failover: the replica catches up with the master first, so no
// acknowledged write is lost) and returns it once the cluster is healthy
// again with it as a master.
func (c *Cluster) Failover(master *Server) *Server {
	c.t.Helper()
	rs := c.ReplicasOf(master)
	if len(rs) == 0 {
		c.t.Fatalf("testredis: master %s has no replica to fail over to", master.Addr)
	}
	r, masters := rs[0], len(c.Masters())
	cl := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer cl.Close()
	if err := cl.Do(context.Background(), "CLUSTER", "FAILOVER").Err(); err != nil {
		c.t.Fatalf("testredis: CLUSTER FAILOVER on %s: %v", r.Addr, err)
	}
	deadline := time.Now().Add(time.Minute)
	for role(r.Addr) != "master" {
		if time.Now().After(deadline) {
			c.t.Fatalf("testredis: %s did not become a master within a minute of CLUSTER FAILOVER", r.Addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for role(master.Addr) != "slave" {
		if time.Now().After(deadline) {
			c.t.Fatalf("testredis: %s is still a master a minute after its replica took over", master.Addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.WaitHealthy(masters, time.Minute)
	return r
}

// KeysMatching returns how many keys matching pattern (KEYS) each
// running master holds.
func (c *Cluster) KeysMatching(pattern string) map[string]int {
	c.t.Helper()
	out := map[string]int{}
	for _, m := range c.Masters() {
		cl := redis.NewClient(&redis.Options{Addr: m.Addr})
		keys, err := cl.Keys(context.Background(), pattern).Result()
		cl.Close()
		if err != nil {
			c.t.Fatalf("testredis: KEYS %s on %s: %v", pattern, m.Addr, err)
		}
		out[m.Addr] = len(keys)
	}
	return out
}

// Keys returns how many keys each running master holds.
func (c *Cluster) Keys() map[string]int64 {
	c.t.Helper()
	out := map[string]int64{}
	for _, m := range c.Masters() {
		cl := redis.NewClient(&redis.Options{Addr: m.Addr})
		n, err := cl.DBSize(context.Background()).Result()
		cl.Close()
		if err != nil {
			c.t.Fatalf("testredis: DBSIZE on %s: %v", m.Addr, err)
		}
		out[m.Addr] = n
	}
	return out
}
