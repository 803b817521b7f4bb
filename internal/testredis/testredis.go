// Package testredis starts a real redis-server for tests: Debian's
// redis-server (installed by test/setup.sh), on a free loopback port, with
// no persistence, stopped when the test ends. There is no fake: a test that
// needs Redis fails, saying how to install it, when redis-server is missing.
package testredis

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/internal/redisproc"
)

// Server is a running redis-server.
type Server struct {
	Addr string // host:port on 127.0.0.1
	URL  string // redis://127.0.0.1:port/0

	t    testing.TB
	cmd  *exec.Cmd
	dir  string
	port int
	done chan struct{}
	log  *bytes.Buffer
}

// Start starts a redis-server for t and returns its URL
// (redis://127.0.0.1:port/0). The server is killed, and its temporary
// directory removed, when t ends.
func Start(t testing.TB) string {
	t.Helper()
	return StartServer(t).URL
}

// StartServer is Start returning the Server, for tests that also stop and
// restart it.
func StartServer(t testing.TB) *Server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server is not on PATH (%v): run bash test/setup.sh, which installs Debian's redis-server", err)
	}
	s := &Server{t: t, dir: t.TempDir()}
	t.Cleanup(s.Stop)
	// A port taken between choosing it and redis binding it makes redis
	// exit; choose another then, a bounded number of times.
	var err error
	for range 5 {
		if s.port, err = freePort(); err != nil {
			t.Fatal(err)
		}
		if err = s.start(); err == nil {
			return s
		}
	}
	t.Fatalf("testredis: %v", err)
	return nil
}

// Restart kills the server (SIGKILL, as a crash) and starts a new, empty
// one on the same port.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		s.t.Fatalf("testredis: restart: %v", err)
	}
}

// Stop kills the server (SIGKILL) and waits for it to exit. Stopping a
// stopped server does nothing.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

func (s *Server) start() error {
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
	s.URL = "redis://" + s.Addr + "/0"
	s.log = new(bytes.Buffer)
	cmd := exec.Command("redis-server", redisproc.Args(strconv.Itoa(s.port), s.dir)...)
	cmd.Stdout = s.log
	cmd.Stderr = s.log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting redis-server: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.cmd, s.done = cmd, done

	// Wait until it answers PING, for a bounded time.
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := redisproc.Ping(s.Addr)
		if err == nil {
			return nil
		}
		select {
		case <-done:
			s.cmd = nil
			logText, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			return fmt.Errorf("redis-server on %s exited before answering PING: %s%s", s.Addr, s.log.Bytes(), lastLines(logText))
		default:
		}
		if time.Now().After(deadline) {
			s.Stop()
			return fmt.Errorf("redis-server on %s did not answer PING within 15 s: %v", s.Addr, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("testredis: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func lastLines(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}
