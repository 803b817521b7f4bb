package proxy

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What happens after the agent exited: the rest of its stdout and stderr
// reach a slow consumer whole; a consumer that takes nothing, and a child
// of the agent that holds its pipes and writes on, end the proxy within
// bounds.

// directStderr runs the fake agent without the proxy and returns what it
// wrote to stderr.
func directStderr(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(fakeAgent, args...)
	var errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &errOut
	require.NoError(t, cmd.Run())
	return errOut.Bytes()
}

// markWriter is a client's stdout that closes seen once mark went by (the
// agent wrote its last line and is exiting).
type markWriter struct {
	syncBuffer
	mark []byte
	seen chan struct{}
	once sync.Once
}

func (m *markWriter) Write(p []byte) (int, error) {
	n, err := m.syncBuffer.Write(p)
	if bytes.Contains(m.syncBuffer.Bytes(), m.mark) {
		m.once.Do(func() { close(m.seen) })
	}
	return n, err
}

// pausingWriter is a slow consumer of the proxy's stderr: each write
// takes each, and once after is closed, the next waits pause.
type pausingWriter struct {
	syncBuffer
	each   time.Duration
	after  <-chan struct{}
	pause  time.Duration
	paused bool
}

func (w *pausingWriter) Write(p []byte) (int, error) {
	if !w.paused {
		select {
		case <-w.after:
			w.paused = true
			time.Sleep(w.pause)
		default:
			time.Sleep(w.each)
		}
	}
	return w.syncBuffer.Write(p)
}

// The agent writes a megabyte to stderr and exits while the proxy's stderr
// is slow to take it (20 ms a write, then a pause of 3 s, more than the
// 2 s the proxy used to give a copied stderr after the agent's exit):
// every byte reaches it, in order.
func TestStderrAllToSlowConsumer(t *testing.T) {
	const n = 1 << 20
	want := directStderr(t, "spew", fmt.Sprint(n))
	require.Len(t, want, n)
	stdout := &markWriter{mark: []byte(`"x/spewed"`), seen: make(chan struct{})}
	stderr := &pausingWriter{each: 20 * time.Millisecond, after: stdout.seen, pause: 3 * time.Second}
	res := runProxy(t, Config{Command: []string{fakeAgent, "spew", fmt.Sprint(n)}, Stdout: stdout, Stderr: stderr})
	assert.Equal(t, 0, res.Status)
	got := stderr.Bytes()
	assert.Equal(t, len(want), len(got), "bytes the agent wrote to stderr, bytes the proxy's stderr got")
	assert.Equal(t, sha256.Sum256(want), sha256.Sum256(got), "the proxy's stderr got other bytes than the agent wrote")
}

// proxyProc is a built acpnormd running `proxy`, in a process group of its
// own so that the test can stop all it started (the agent and any child
// of it) by that group.
type proxyProc struct {
	cmd    *exec.Cmd
	done   chan struct{}
	err    error
	stderr syncBuffer
}

func startProxyProc(t *testing.T, stdin, stdout, stderr *os.File, args ...string) *proxyProc {
	t.Helper()
	p := &proxyProc{cmd: exec.Command(acpnormd(t), append([]string{"proxy"}, args...)...), done: make(chan struct{})}
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = stdin, stdout, &p.stderr
	if stderr != nil {
		p.cmd.Stderr = stderr
	}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	})
	return p
}

// wait waits up to limit for the proxy to exit and returns its status; -1
// when it was still running then.
func (p *proxyProc) wait(limit time.Duration) int {
	select {
	case <-p.done:
	case <-time.After(limit):
		return -1
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		return -2
	}
	return 0
}

// The CLI copies the agent's stderr when its own is a pipe: with that pipe
// read slowly after the agent wrote megabytes and exited, every byte
// reaches it.
func TestCLIStderrAllToSlowConsumer(t *testing.T) {
	const n = 4 << 20
	want := directStderr(t, "spew", fmt.Sprint(n))
	errR, errW, err := os.Pipe()
	require.NoError(t, err)
	defer errR.Close()
	outR, outW, err := os.Pipe()
	require.NoError(t, err)
	defer outR.Close()

	p := startProxyProc(t, nil, outW, errW, "--wire", filepath.Join(t.TempDir(), "wire.ndjson"), "--", fakeAgent, "spew", fmt.Sprint(n))
	errW.Close()
	outW.Close()

	spewed := make(chan struct{})
	go func() {
		br := bufio.NewReader(outR)
		line, _ := br.ReadBytes('\n')
		if bytes.Contains(line, []byte(`"x/spewed"`)) {
			close(spewed)
		}
		_, _ = io.Copy(io.Discard, br)
	}()
	got := make(chan []byte, 1)
	go func() {
		var all bytes.Buffer
		buf := make([]byte, 32<<10)
		paused := false
		for {
			if !paused {
				select {
				case <-spewed: // the agent is exiting: the consumer is busy for 3 s
					paused = true
					time.Sleep(3 * time.Second)
				default:
					time.Sleep(time.Millisecond)
				}
			}
			n, err := errR.Read(buf)
			all.Write(buf[:n])
			if err != nil {
				got <- all.Bytes()
				return
			}
		}
	}()
	code := p.wait(30 * time.Second)
	require.NotEqual(t, -1, code, "the proxy still ran 30 s after it started")
	out := <-got
	assert.Equal(t, 0, code)
	assert.Equal(t, len(want), len(out), "bytes the agent wrote to stderr, bytes the proxy's stderr got")
	assert.Equal(t, sha256.Sum256(want), sha256.Sum256(out), "the proxy's stderr got other bytes than the agent wrote")
}
