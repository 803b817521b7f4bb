package chaos

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// builtBin is acpnormd built once for the package (or $ACPNORMD_BIN).
var builtBin string

func TestMain(m *testing.M) {
	code := func() int {
		if bin := os.Getenv("ACPNORMD_BIN"); bin != "" {
			builtBin = bin
			return m.Run()
		}
		dir, err := os.MkdirTemp("", "acpnormd-chaos-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		builtBin = filepath.Join(dir, "acpnormd")
		if out, err := exec.Command("go", "build", "-o", builtBin, "../../cmd/acpnormd").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

var servingLine = regexp.MustCompile(`msg=serving grpc=(\S+) metrics=(\S+)`)

// daemon is one acpnormd process of the fleet, on a fixed loopback port
// so that a restart serves the address the clients know.
type daemon struct {
	name string
	addr string
	args []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	paused bool
	logs   []string // the last lines of its stderr, for a failure message
}

// startDaemon starts acpnormd with args on a free loopback port; it is
// killed, by its pid, when t ends.
func startDaemon(t *testing.T, name string, args ...string) *daemon {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	d := &daemon{name: name, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), args: args}
	t.Cleanup(d.stop)
	if err := d.start(); err != nil {
		t.Fatal(err)
	}
	return d
}

// start runs the process and waits until it says it serves.
func (d *daemon) start() error {
	args := append([]string{"--listen", d.addr, "--metrics-listen", "127.0.0.1:0", "--grace", "10m"}, d.args...)
	cmd := exec.Command(builtBin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	ready := make(chan struct{}, 1)
	var logFile *os.File
	if dir := os.Getenv("ACPNORM_CHAOS_LOGDIR"); dir != "" {
		// Every line of its stderr, for looking into a failure.
		logFile, _ = os.Create(filepath.Join(dir, fmt.Sprintf("acpnormd-%s-%d.log", d.name, cmd.Process.Pid)))
	}
	go func() {
		if logFile != nil {
			defer logFile.Close()
		}
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if logFile != nil {
				fmt.Fprintln(logFile, line)
			}
			if servingLine.MatchString(line) {
				select {
				case ready <- struct{}{}:
				default:
				}
			}
			d.mu.Lock()
			d.logs = append(d.logs, line)
			if len(d.logs) > 50 {
				d.logs = d.logs[len(d.logs)-50:]
			}
			d.mu.Unlock()
		}
		_ = cmd.Wait()
		close(exited)
	}()
	d.mu.Lock()
	d.cmd, d.exited, d.paused = cmd, exited, false
	d.mu.Unlock()
	select {
	case <-ready:
		return nil
	case <-exited:
		return fmt.Errorf("acpnormd %s exited before serving on %s: %v", d.name, d.addr, d.lastLogs())
	case <-time.After(30 * time.Second):
		d.stop()
		return fmt.Errorf("acpnormd %s did not say it was serving within 30 s", d.name)
	}
}

func (d *daemon) lastLogs() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.logs...)
}

// signal sends sig to the running process.
func (d *daemon) signal(sig syscall.Signal) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd == nil {
		return fmt.Errorf("acpnormd %s is not running", d.name)
	}
	if err := d.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("%v to acpnormd %s (pid %d): %w", sig, d.name, d.cmd.Process.Pid, err)
	}
	switch sig {
	case syscall.SIGSTOP:
		d.paused = true
	case syscall.SIGCONT:
		d.paused = false
	}
	return nil
}

// stop SIGKILLs the process, by its pid, and waits until it is gone.
// Stopping a stopped daemon does nothing.
func (d *daemon) stop() {
	d.mu.Lock()
	cmd, exited := d.cmd, d.exited
	d.cmd, d.paused = nil, false
	d.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGCONT)
	_ = cmd.Process.Kill()
	<-exited
}

// heal resumes a paused daemon and starts a stopped one.
func (d *daemon) heal() error {
	d.mu.Lock()
	stopped, paused := d.cmd == nil, d.paused
	d.mu.Unlock()
	if paused {
		if err := d.signal(syscall.SIGCONT); err != nil {
			return err
		}
	}
	if stopped {
		return d.start()
	}
	return nil
}
