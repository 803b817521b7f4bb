package load

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/acpnorm/acpnorm/internal/redisproc"
)

// StartRedis starts bin (Debian's redis-server) on a free loopback port,
// without persistence, its files (and its log, redis.log) in dir, and waits until it answers PING.
// args are more redis-server options ("--replicaof", "127.0.0.1 PORT").
// The URL to give acpnormd --store is redis://ADDR/0.
func StartRedis(ctx context.Context, bin, dir string, args ...string) (*Server, error) {
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin, append(redisproc.Args(port, dir), args...)...)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	s := &Server{Name: "redis", Addr: addr, cmd: cmd}
	limit := time.Now().Add(20 * time.Second)
	for {
		err := redisproc.Ping(addr)
		if err == nil {
			return s, nil
		}
		if time.Now().After(limit) || ctx.Err() != nil {
			s.Stop()
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			return nil, fmt.Errorf("redis-server did not answer PING on %s within 20s: %v\n%s", addr, err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// RedisStat reads one integer field of Redis's INFO stats (for example
// total_net_input_bytes, the bytes Redis has received from clients).
func RedisStat(addr, field string) (int64, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("INFO stats\r\n")); err != nil {
		return 0, err
	}
	r := bufio.NewReader(c)
	head, err := r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
	if err != nil || !strings.HasPrefix(head, "$") {
		return 0, fmt.Errorf("INFO answered %s", strconv.Quote(head))
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(body), "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("INFO stats has no %s", field)
}
