// Package redisproc holds what the tests and the benchmarks share about
// running a throwaway redis-server: its command line (loopback only, no
// persistence) and a PING that says when it is ready.
package redisproc

import (
	"bufio"
	"context"
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"time"
)

// Args are the redis-server arguments for a server on 127.0.0.1:port with
// no persistence, its files and its log (redis.log) in dir.
func Args(port, dir string) []string {
	return []string{
		"--port", port, "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no",
		"--dir", dir, "--logfile", filepath.Join(dir, "redis.log"),
		"--daemonize", "no", "--protected-mode", "yes",
	}
}

// Ping sends one PING in the inline protocol to addr and expects +PONG,
// within a second.
func Ping(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return errors.New("PING answered " + strconv.Quote(line))
	}
	return nil
}
