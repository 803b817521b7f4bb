// Package testredis starts real redis-server processes for tests: Debian's
// redis-server (installed by test/setup.sh), on free loopback ports, with
// no persistence unless asked, each killed by its pid when the test ends.
// Beside one server (Start, StartServer) it starts a master with replicas
// watched by Sentinels (StartSentinel) and a Redis Cluster (StartCluster).
// There is no fake: a test that needs Redis fails, saying how to install
// it, when redis-server is missing.
package testredis

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
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
	args []string // after redisproc.Args
	conf string   // the config file redis-server starts with
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
// restart it. args are more redis-server options, after (and so
// overriding) those of redisproc.Args: "--appendonly", "yes" for an AOF,
// "--replicaof", "127.0.0.1 6379" for a replica.
func StartServer(t testing.TB, args ...string) *Server {
	t.Helper()
	return startServer(t, false, args)
}

func startServer(t testing.TB, cluster bool, args []string) *Server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server is not on PATH (%v): run bash test/setup.sh, which installs Debian's redis-server", err)
	}
	s := &Server{t: t, dir: t.TempDir(), args: args}
	// An empty config file, which Sentinel's CONFIG REWRITE of a server it
	// reconfigures can write to.
	s.conf = filepath.Join(s.dir, "redis.conf")
	if err := os.WriteFile(s.conf, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	// A port taken between choosing it and redis binding it makes redis
	// exit; choose another then, a bounded number of times.
	var err error
	for range 5 {
		if s.port, err = freePort(cluster); err != nil {
			t.Fatal(err)
		}
		if err = s.start(); err == nil {
			return s
		}
	}
	t.Fatalf("testredis: %v", err)
	return nil
}

// Restart kills the server (SIGKILL, as a crash) and starts it again on
// the same port and directory: empty without persistence, with what its
// AOF kept when started with one.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.Start()
}

// Start starts a stopped server again on its port and directory (see
// Restart).
func (s *Server) Start() {
	s.t.Helper()
	if s.cmd != nil {
		return
	}
	if err := s.start(); err != nil {
		s.t.Fatalf("testredis: start again: %v", err)
	}
}

// Stop kills the server (SIGKILL) and waits for it to exit. Stopping a
// stopped server does nothing.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	// SIGKILL ends a paused process too. A SIGCONT first would let it run
	// between the two signals, and on a loaded machine answer a command
	// it held (a test that stops a paused server then saw its commit
	// applied): it comes after, when the process can no longer run.
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Process.Signal(syscall.SIGCONT)
	<-s.done
	s.cmd = nil
}

// Pause stops the process (SIGSTOP): it holds its connections but answers
// nothing until Resume.
func (s *Server) Pause() {
	s.t.Helper()
	if s.cmd == nil || s.cmd.Process.Signal(syscall.SIGSTOP) != nil {
		s.t.Fatalf("testredis: pausing %s: not running", s.Addr)
	}
	// The signal is delivered when the process next runs: until the
	// kernel shows it stopped, it may still answer a command sent after
	// Pause returned (a loaded machine showed it).
	stat := fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		b, err := os.ReadFile(stat)
		if err != nil {
			return // no /proc: as before, the signal sent
		}
		// The state follows the command name's closing parenthesis.
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && (b[i+2] == 'T' || b[i+2] == 't') {
			return
		}
	}
	s.t.Fatalf("testredis: pausing %s: the process is not stopped 5 s after SIGSTOP", s.Addr)
}

// Resume lets a paused process go on (SIGCONT).
func (s *Server) Resume() {
	s.t.Helper()
	if s.cmd == nil || s.cmd.Process.Signal(syscall.SIGCONT) != nil {
		s.t.Fatalf("testredis: resuming %s: not running", s.Addr)
	}
}

// Running reports whether the server's process runs (it may be paused).
func (s *Server) Running() bool { return s.cmd != nil }

// Pid is the server's process id (0 when stopped).
func (s *Server) Pid() int {
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Dir is the server's directory: its log (redis.log) and data files.
func (s *Server) Dir() string { return s.dir }

func (s *Server) start() error {
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
	s.URL = "redis://" + s.Addr + "/0"
	s.log = new(bytes.Buffer)
	args := append([]string{s.conf}, redisproc.Args(strconv.Itoa(s.port), s.dir)...)
	cmd := exec.Command("redis-server", append(args, s.args...)...)
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

// freePort returns a loopback port nothing listens on; for a cluster node
// also its bus port, 10000 above it.
func freePort(cluster bool) (int, error) {
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("testredis: finding a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		if !cluster {
			l.Close()
			return port, nil
		}
		if port+10000 > 65535 {
			l.Close()
			continue
		}
		bus, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10000)))
		l.Close()
		if err == nil {
			bus.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("testredis: no free port with a free bus port 10000 above it")
}

func lastLines(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}
