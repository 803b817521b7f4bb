package testredis

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// MasterName is the name the Sentinels of StartSentinel know the master by.
const MasterName = "acpnorm"

// Sentinel is a master with replicas, watched by Sentinels: real
// redis-server processes, the Sentinels in redis-server's --sentinel mode.
type Sentinel struct {
	Servers   []*Server // the master and its replicas, in the order started (Servers[0] was the first master)
	Sentinels []*Server
	URL       string // redis://sentinel1/0?master_name=acpnorm&addr=sentinel2&addr=..., go-redis's failover form

	t testing.TB
}

// StartSentinel starts a master, replicas replicas of it and sentinels
// Sentinels watching it with the given quorum, which consider the master
// down after downAfter without an answer (failover-timeout is a few times
// that, so that a failed attempt is retried soon). It returns once every
// replica is in sync and every Sentinel knows the replicas and the other
// Sentinels.
func StartSentinel(t testing.TB, replicas, sentinels, quorum int, downAfter time.Duration) *Sentinel {
	t.Helper()
	d := &Sentinel{t: t}
	master := StartServer(t)
	d.Servers = append(d.Servers, master)
	for range replicas {
		d.Servers = append(d.Servers, StartServer(t, "--replicaof", "127.0.0.1 "+strconv.Itoa(master.port)))
	}
	d.waitReplicas(master, replicas)
	addrs := []string{}
	for range sentinels {
		s := startSentinel(t, master.port, quorum, downAfter)
		d.Sentinels = append(d.Sentinels, s)
		addrs = append(addrs, s.Addr)
	}
	d.URL = "redis://" + addrs[0] + "/0?master_name=" + MasterName
	for _, a := range addrs[1:] {
		d.URL += "&addr=" + a
	}
	// Each Sentinel learns the replicas from the master and the other
	// Sentinels from the master's hello channel, within a few seconds.
	deadline := time.Now().Add(time.Minute)
	for _, s := range d.Sentinels {
		c := redis.NewClient(&redis.Options{Addr: s.Addr})
		for {
			m, err := c.Do(context.Background(), "SENTINEL", "MASTER", MasterName).Result()
			info := flat(m)
			if err == nil && info["num-slaves"] == strconv.Itoa(replicas) && info["num-other-sentinels"] == strconv.Itoa(sentinels-1) {
				break
			}
			if time.Now().After(deadline) {
				c.Close()
				t.Fatalf("testredis: Sentinel %s does not know %d replicas and %d other Sentinels within a minute: %v %v", s.Addr, replicas, sentinels-1, info, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		c.Close()
	}
	return d
}

func startSentinel(t testing.TB, masterPort, quorum int, downAfter time.Duration) *Server {
	t.Helper()
	s := &Server{t: t, dir: t.TempDir()}
	t.Cleanup(s.Stop)
	var err error
	for range 5 {
		if s.port, err = freePort(false); err != nil {
			t.Fatal(err)
		}
		ms := downAfter.Milliseconds()
		conf := fmt.Sprintf(`port %d
bind 127.0.0.1
protected-mode no
daemonize no
dir %s
logfile %s
sentinel monitor %s 127.0.0.1 %d %d
sentinel down-after-milliseconds %s %d
sentinel failover-timeout %s %d
sentinel parallel-syncs %s 2
`, s.port, s.dir, filepath.Join(s.dir, "redis.log"), MasterName, masterPort, quorum, MasterName, ms, MasterName, 3*ms, MasterName)
		// Sentinel rewrites its config file as it learns: it must be
		// its own and writable.
		s.conf = filepath.Join(s.dir, "sentinel.conf")
		if err := os.WriteFile(s.conf, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		if err = s.startSentinel(); err == nil {
			return s
		}
	}
	t.Fatalf("testredis: %v", err)
	return nil
}

// Master returns the server the Sentinels name as the master, once a
// majority of them name the same running server, which answers as a
// master; not is a server that must not be it (the one just killed). It
// fails the test after timeout.
func (d *Sentinel) Master(not *Server, timeout time.Duration) *Server {
	d.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		votes := map[string]int{}
		for _, s := range d.Sentinels {
			if !s.Running() {
				continue
			}
			c := redis.NewClient(&redis.Options{Addr: s.Addr, DialTimeout: time.Second, ReadTimeout: time.Second})
			a, err := c.Do(context.Background(), "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MasterName).StringSlice()
			c.Close()
			if err == nil && len(a) == 2 {
				votes[net.JoinHostPort(a[0], a[1])]++
			}
		}
		for addr, n := range votes {
			if n*2 <= len(d.Sentinels) {
				continue
			}
			for _, srv := range d.Servers {
				if srv.Addr == addr && srv != not && srv.Running() && role(srv.Addr) == "master" {
					return srv
				}
			}
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("testredis: no new master within %v (the Sentinels name %v)\n%s", timeout, votes, d.why())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// why says what each running Sentinel knows of the replicas (their flags,
// how long their link to the master has been down, how old their INFO
// is) and each running server's replication role and link: what decides
// whether a Sentinel finds a replica good enough to promote, for a test
// that failed waiting for one.
func (d *Sentinel) why() string {
	var b strings.Builder
	for _, s := range d.Sentinels {
		if !s.Running() {
			continue
		}
		c := redis.NewClient(&redis.Options{Addr: s.Addr, DialTimeout: time.Second, ReadTimeout: time.Second})
		reps, err := c.Do(context.Background(), "SENTINEL", "REPLICAS", MasterName).Slice()
		c.Close()
		fmt.Fprintf(&b, "  sentinel %s:", s.Addr)
		if err != nil {
			fmt.Fprintf(&b, " %v\n", err)
			continue
		}
		for _, r := range reps {
			f := map[string]string{}
			if kv, ok := r.([]any); ok {
				for i := 0; i+1 < len(kv); i += 2 {
					f[fmt.Sprint(kv[i])] = fmt.Sprint(kv[i+1])
				}
			} else if m, ok := r.(map[any]any); ok {
				for k, v := range m {
					f[fmt.Sprint(k)] = fmt.Sprint(v)
				}
			}
			fmt.Fprintf(&b, " [%s:%s flags=%s master-link-down-time=%s info-refresh=%s priority=%s]",
				f["ip"], f["port"], f["flags"], f["master-link-down-time"], f["info-refresh"], f["slave-priority"])
		}
		b.WriteString("\n")
	}
	for _, srv := range d.Servers {
		if !srv.Running() {
			continue
		}
		c := redis.NewClient(&redis.Options{Addr: srv.Addr, DialTimeout: time.Second, ReadTimeout: time.Second})
		info, err := c.Info(context.Background(), "replication").Result()
		c.Close()
		f := infoFields(info)
		fmt.Fprintf(&b, "  server %s: role=%s master_link_status=%s master_link_down_since_seconds=%s err=%v\n",
			srv.Addr, f["role"], f["master_link_status"], f["master_link_down_since_seconds"], err)
	}
	return b.String()
}

// Replicas returns the running servers other than master.
func (d *Sentinel) Replicas(master *Server) []*Server {
	var r []*Server
	for _, s := range d.Servers {
		if s != master && s.Running() {
			r = append(r, s)
		}
	}
	return r
}

// WaitReplicas waits until master has n replicas online and in sync.
func (d *Sentinel) WaitReplicas(master *Server, n int) { d.t.Helper(); d.waitReplicas(master, n) }

func (d *Sentinel) waitReplicas(master *Server, n int) {
	d.t.Helper()
	waitReplicas(d.t, master, n)
}

// Settle waits until the master the Sentinels name has n replicas in
// sync, following any failover meanwhile (on a loaded machine the
// Sentinels may fail over again), and returns that master.
func (d *Sentinel) Settle(n int, timeout time.Duration) *Server {
	d.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		m := d.Master(nil, time.Until(deadline))
		if inSync(m, n, 5*time.Second) == nil {
			return m
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("testredis: the master %s has not %d replicas in sync within %v", m.Addr, n, timeout)
		}
	}
}

// waitReplicas waits, for a minute at most, until master reports n
// replicas online at its own replication offset.
func waitReplicas(t testing.TB, master *Server, n int) {
	t.Helper()
	if err := inSync(master, n, time.Minute); err != nil {
		t.Fatalf("testredis: %v", err)
	}
}

// inSync waits, for at most timeout, until master reports n replicas
// online at its own replication offset.
func inSync(master *Server, n int, timeout time.Duration) error {
	c := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer c.Close()
	deadline := time.Now().Add(timeout)
	for {
		info, err := c.Info(context.Background(), "replication").Result()
		if err == nil {
			fields := infoFields(info)
			online := 0
			for k, v := range fields {
				if strings.HasPrefix(k, "slave") && strings.Contains(v, "state=online") && strings.Contains(v, "offset="+fields["master_repl_offset"]+",") {
					online++
				}
			}
			if online >= n {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s has not %d replicas in sync within %v: %v %v", master.Addr, n, timeout, info, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *Server) startSentinel() error {
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
	s.URL = "redis://" + s.Addr
	s.args = []string{"--sentinel"}
	return s.start()
}

// role is what INFO replication says the server at addr is ("master",
// "slave"), or "" when it does not answer.
func role(addr string) string {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second})
	defer c.Close()
	info, err := c.Info(context.Background(), "replication").Result()
	if err != nil {
		return ""
	}
	return infoFields(info)["role"]
}

// infoFields splits an INFO reply into its fields.
func infoFields(info string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(info, "\r\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && !strings.HasPrefix(l, "#") {
			m[k] = v
		}
	}
	return m
}

// flat turns a RESP2 flat list of field, value, ... into a map.
func flat(v any) map[string]string {
	m := map[string]string{}
	switch l := v.(type) {
	case []any:
		for i := 0; i+1 < len(l); i += 2 {
			m[fmt.Sprint(l[i])] = fmt.Sprint(l[i+1])
		}
	case map[any]any:
		for k, x := range l {
			m[fmt.Sprint(k)] = fmt.Sprint(x)
		}
	}
	return m
}
