package proxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	acpclient "github.com/acpnorm/acpnorm/client"
	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/replay"
	"github.com/acpnorm/acpnorm/internal/testlog"
	"github.com/acpnorm/acpnorm/internal/testredis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// The remote path (Recorder.Remote, `acpnormd proxy --addr A,B`) against
// real acpnormd processes on loopback, killed and restarted while the
// agent's session goes through the proxy.

var (
	daemonOnce sync.Once
	daemonBin  string
	daemonErr  error
)

// acpnormd builds cmd/acpnormd once, next to the fake agent. The tests
// that run it are skipped with -short.
func acpnormd(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: this test builds and runs acpnormd processes")
	}
	daemonOnce.Do(func() {
		daemonBin = filepath.Join(filepath.Dir(fakeAgent), "acpnormd")
		if out, err := exec.Command("go", "build", "-o", daemonBin, "../../cmd/acpnormd").CombinedOutput(); err != nil {
			daemonErr = fmt.Errorf("building acpnormd: %v\n%s", err, out)
		}
	})
	if daemonErr != nil {
		t.Fatal(daemonErr)
	}
	return daemonBin
}

// freeAddr is a loopback address nothing listens on (for now).
func freeAddr(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close())
	return addr
}

// daemon is one acpnormd process. Without a store a restart loses every
// session, as a store that lost its data would.
type daemon struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

var serving = regexp.MustCompile(`msg=serving grpc=`)

func startAcpnormd(t *testing.T, addr string, args ...string) *daemon {
	t.Helper()
	cmd := exec.Command(acpnormd(t), append([]string{"--listen", addr, "--metrics-listen", "127.0.0.1:0", "--grace", "10m"}, args...)...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	d := &daemon{cmd: cmd, exited: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		said := false
		for sc.Scan() {
			if !said && serving.Match(sc.Bytes()) {
				said = true
				close(ready)
			}
		}
		cmd.Wait()
		close(d.exited)
	}()
	t.Cleanup(func() { d.kill(t) })
	select {
	case <-ready:
	case <-d.exited:
		t.Fatalf("acpnormd on %s exited before serving", addr)
	case <-time.After(30 * time.Second):
		t.Fatalf("acpnormd on %s did not say it was serving within 30s", addr)
	}
	return d
}

// kill ends the process with SIGKILL and waits until it is gone.
func (d *daemon) kill(t *testing.T) {
	t.Helper()
	select {
	case <-d.exited:
		return
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-d.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("acpnormd pid %d still running 30s after SIGKILL", d.cmd.Process.Pid)
	}
}

// pacedClient is client, reading each of the agent's lines pace after the
// one before (the relay waits for the client, never for acpnormd), and
// calling fault once, after the at-th line of the recording.
func pacedClient(file string, toAgent io.WriteCloser, fromAgent io.Reader, pace time.Duration, at int, fault func()) error {
	defer toAgent.Close()
	lines, err := replay.ReadFile(file)
	if err != nil {
		return err
	}
	in := bufio.NewReaderSize(fromAgent, 1<<20)
	for i, l := range lines {
		if i == at && fault != nil {
			fault()
		}
		if l.Dir == pb.Direction_DIRECTION_CLIENT_TO_AGENT {
			if _, err := toAgent.Write(append(append([]byte(nil), l.Msg...), '\n')); err != nil {
				return err
			}
			continue
		}
		time.Sleep(pace)
		got, err := in.ReadBytes('\n')
		if err != nil {
			return fmt.Errorf("line %d: %w", l.Number, err)
		}
		if !bytes.Equal(bytes.TrimSuffix(got, []byte("\n")), l.Msg) {
			return fmt.Errorf("line %d: the client got %q, the agent sent %q", l.Number, got, l.Msg)
		}
	}
	toAgent.Close()
	_, err = io.Copy(io.Discard, in)
	return err
}

// playPaced runs the recording's agent behind the proxy with the paced
// client in front.
func playPaced(t *testing.T, rec *Recorder, finish time.Duration, at int, fault func()) Result {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	errc := make(chan error, 1)
	go func() { errc <- pacedClient(sample, inW, outR, 10*time.Millisecond, at, fault) }()
	res := runProxy(t, Config{Command: []string{fakeAgent, "play", sample}, Stdin: inR, Stdout: outW, Recorder: rec, Say: rec.Say, Finish: finish})
	outW.Close()
	require.NoError(t, <-errc, "the relay's bytes differ from the agent's")
	return res
}

// withoutRevision is x with its revision number cleared: a call rebuilt
// after a loss may end at a higher revision than one process's.
func withoutRevision(xs []*pb.ShellExec) []*pb.ShellExec {
	var out []*pb.ShellExec
	for _, x := range xs {
		x = proto.Clone(x).(*pb.ShellExec)
		x.Revision = 0
		out = append(out, x)
	}
	return out
}

// Real acpnormd processes fail while the session goes through the proxy:
// none answers at first, the one answering is killed and restarted on its
// address (its sessions gone, or kept in a shared Redis), or is killed and
// the next address takes over. The proxy buffers what had no answer, reconnects, sends it again,
// rebuilds what the restarted server lost, and writes the record a direct
// replay of the wire recording makes; the client gets every byte.
func TestRemoteSurvivesRestartAndFailover(t *testing.T) {
	acpnormd(t) // built before any fault
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) (addrs []string, fault func(), lost bool)
	}{
		{"down at first", func(t *testing.T) ([]string, func(), bool) {
			addr := freeAddr(t)
			return []string{addr}, func() { startAcpnormd(t, addr) }, false
		}},
		{"killed and restarted", func(t *testing.T) ([]string, func(), bool) {
			addr := freeAddr(t)
			d := startAcpnormd(t, addr)
			return []string{addr}, func() {
				d.kill(t)
				time.Sleep(300 * time.Millisecond) // frames go by while none answers
				startAcpnormd(t, addr)
			}, true
		}},
		{"killed and restarted, shared Redis", func(t *testing.T) ([]string, func(), bool) {
			addr, store := freeAddr(t), testredis.Start(t)
			d := startAcpnormd(t, addr, "--store", store)
			return []string{addr}, func() {
				d.kill(t)
				time.Sleep(300 * time.Millisecond)
				startAcpnormd(t, addr, "--store", store)
			}, false
		}},
		{"killed, next address", func(t *testing.T) ([]string, func(), bool) {
			a, b := freeAddr(t), freeAddr(t)
			d := startAcpnormd(t, a)
			startAcpnormd(t, b)
			return []string{a, b}, func() { d.kill(t) }, true
		}},
	} {
		for _, all := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/all=%v", tc.name, all), func(t *testing.T) {
				addrs, fault, lost := tc.setup(t)
				c, err := acpclient.New(addrs, acpclient.WithBackoff(10*time.Millisecond, 200*time.Millisecond))
				require.NoError(t, err)
				defer c.Close()
				var said notices
				var out, wire testlog.Buffer
				rec := &Recorder{Remote: c, Service: "acpnormd", Dialect: "auto", Out: &out, Wire: &wire, AllRevisions: all, Say: said.say}
				res := playPaced(t, rec, 30*time.Second, 70, fault)
				require.Equal(t, 0, res.Status)
				st := rec.Stats()
				t.Logf("%+v; said %q", st, said.msgs)
				assert.Empty(t, said.msgs, "nothing was dropped or cut short")
				assert.Zero(t, st.Dropped)
				assert.Zero(t, st.Unsent)
				assert.Zero(t, st.FrameErrors)
				assert.Positive(t, st.Reconnects, "the proxy did not reconnect")
				if lost {
					assert.Positive(t, st.Losses, "the lost session was not rebuilt")
				}

				xs := records(t, out.Bytes())
				require.NotEmpty(t, xs)
				want := replayed(t, wire.Bytes(), xs[0].GetSessionId(), !all)
				if !all {
					for _, x := range xs {
						assert.Equal(t, pb.ShellState_SHELL_STATE_ENDED, x.GetState())
					}
					if lost {
						sameExecs(t, withoutRevision(want), withoutRevision(xs))
					} else {
						sameExecs(t, want, xs)
					}
					return
				}
				// Every revision: in order per call, none twice, none back.
				last := map[string]uint32{}
				for _, x := range xs {
					assert.Greater(t, x.GetRevision(), last[x.GetToolCallId()], "call %s went back", x.GetToolCallId())
					last[x.GetToolCallId()] = x.GetRevision()
				}
				if !lost {
					require.Len(t, xs, len(want))
					for i := range want {
						assert.True(t, proto.Equal(want[i], xs[i]), "revision %d:\nreplay %v\nproxy  %v", i, want[i], xs[i])
					}
				}
			})
		}
	}
}

// No acpnormd answers for the whole session, and the frames pass the
// bound: the proxy drops them from normalization, says so once, counts
// them, and the relay's bytes are untouched.
func TestRemoteDownPastTheBound(t *testing.T) {
	addr := freeAddr(t)
	c, err := acpclient.New([]string{addr}, acpclient.WithBackoff(10*time.Millisecond, 100*time.Millisecond))
	require.NoError(t, err)
	defer c.Close()
	var said notices
	var out, wire testlog.Buffer
	const bound = 8 << 10
	rec := &Recorder{Remote: c, Service: "acpnormd at " + addr, Dialect: "auto", Out: &out, Wire: &wire, BufferBytes: bound, Say: said.say}
	start := time.Now()
	res := playPaced(t, rec, 500*time.Millisecond, -1, nil)
	require.Equal(t, 0, res.Status)
	st := rec.Stats()
	t.Logf("%+v in %v; said %q", st, time.Since(start), said.msgs)
	assert.Equal(t, 1, said.containing("has not answered"), "the drop is said once: %q", said.msgs)
	assert.Equal(t, 1, said.containing("cut short"), "the end of the wait is said once: %q", said.msgs)
	assert.Len(t, said.msgs, 2, "%q", said.msgs)
	assert.Positive(t, st.Dropped)
	assert.Positive(t, st.DroppedBytes)
	assert.Empty(t, out.Bytes(), "nothing was answered")
	assert.Len(t, wireLines(t, wire.Bytes()), int(st.Frames), "the wire recording is whole")

	// What was kept is within the bound: the frames not dropped.
	lines := wireLines(t, wire.Bytes())
	var total int64
	for _, l := range lines {
		total += int64(len(l.Msg))
	}
	assert.LessOrEqual(t, total-st.DroppedBytes, int64(bound), "more than the bound was kept")
}

// The acpnormd the proxy streams to is stopped (SIGSTOP: it accepts
// nothing more and answers nothing) while the agent floods: the relay
// never waits for it (the client gets every byte a direct run writes),
// what had no answer stays within the bound, and the rest is dropped,
// said once and counted.
func TestRemoteStoppedServerNeverSlowsTheRelay(t *testing.T) {
	addr := freeAddr(t)
	d := startAcpnormd(t, addr)
	c, err := acpclient.New([]string{addr}, acpclient.WithBackoff(10*time.Millisecond, 100*time.Millisecond))
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGSTOP))
	defer d.cmd.Process.Signal(syscall.SIGCONT)

	const n, size, bound = 20000, 1024, 256 << 10
	args := []string{"flood", fmt.Sprint(n), fmt.Sprint(size), "s1"}
	want, _ := direct(t, nil, args...)
	var said notices
	var stdout testlog.Buffer
	rec := &Recorder{Remote: c, Service: "acpnormd at " + addr, Dialect: "auto", Out: io.Discard, BufferBytes: bound, Say: said.say}
	start := time.Now()
	res := runProxy(t, Config{Command: append([]string{fakeAgent}, args...), Stdout: &stdout, Recorder: rec, Say: said.say, Finish: 300 * time.Millisecond})
	elapsed := time.Since(start)
	require.Equal(t, 0, res.Status)
	st := rec.Stats()
	t.Logf("%+v, %v; said %q", st, elapsed, said.msgs)
	assert.True(t, bytes.Equal(want, stdout.Bytes()), "the relay lost or changed bytes while acpnormd was stopped")
	assert.Equal(t, int64(n), st.Frames+res.Drops.Behind, "every line is taken or counted")
	assert.Positive(t, st.Dropped)
	assert.Equal(t, 1, said.containing("would pass --buffer-bytes"), "said once: %q", said.msgs)
	assert.Equal(t, 1, said.containing("cut short"), "said once: %q", said.msgs)
	lineBytes := int64(len(want)/n - 1) // each line's message, without its newline
	kept := (st.Frames - st.Dropped) * lineBytes
	assert.Equal(t, st.Dropped*lineBytes, st.DroppedBytes)
	assert.LessOrEqual(t, kept, int64(bound), "more than the bound waited for an answer")
}

// Past the bound, frames are dropped only until an acpnormd answers: once
// one does, what waited is answered and the later frames are normalized.
func TestRemoteDropsOnlyUntilItAnswers(t *testing.T) {
	acpnormd(t)
	addr := freeAddr(t)
	c, err := acpclient.New([]string{addr}, acpclient.WithBackoff(10*time.Millisecond, 100*time.Millisecond))
	require.NoError(t, err)
	defer c.Close()
	var said notices
	var out testlog.Buffer
	// Bigger than any frame of the recording, smaller than its first half.
	rec := &Recorder{Remote: c, Service: "acpnormd at " + addr, Dialect: "auto", Out: &out, BufferBytes: 40 << 10, Say: said.say}
	res := playPaced(t, rec, 30*time.Second, 70, func() { startAcpnormd(t, addr) })
	require.Equal(t, 0, res.Status)
	st := rec.Stats()
	t.Logf("%+v; said %q", st, said.msgs)
	assert.Positive(t, st.Dropped, "nothing passed the bound")
	assert.Equal(t, 1, said.containing("would pass --buffer-bytes"), "said once: %q", said.msgs)
	assert.Len(t, said.msgs, 1, "%q", said.msgs)
	assert.Zero(t, st.Unsent)
	assert.Less(t, st.Dropped, int64(70), "frames after the server came up were dropped too")
	assert.Positive(t, st.Written, "nothing was recorded once the server answered")
	for _, x := range records(t, out.Bytes()) {
		assert.Equal(t, pb.ShellState_SHELL_STATE_ENDED, x.GetState())
	}
}

// The wire lines of the requests a session's Session dropped (past its
// bound, answered) are let go: a long session through the proxy holds
// what its Session keeps, not 16 bytes per frame for as long as it lasts.
// The lines and byte counts of what is kept stay where they were.
func TestRemoteSessionTrimsWhatTheSessionDropped(t *testing.T) {
	c, err := acpclient.New([]string{freeAddr(t)})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	rs := &remoteSession{s: c.Session("s1"), sum: []int64{0}}
	first := rs.s.FirstSequence()
	for n := 1; n <= 10; n++ {
		rs.lines = append(rs.lines, uint64(100+n))
		rs.sum = append(rs.sum, rs.sum[len(rs.sum)-1]+int64(n))
	}
	rs.high = 8 // answered: the first 8

	rs.trim(4) // fewer than half: kept as they are, to copy seldom
	assert.Equal(t, 0, rs.off)
	assert.Len(t, rs.lines, 10)

	rs.trim(9) // only answered ones go, however many were dropped
	assert.Equal(t, 8, rs.off)
	assert.Len(t, rs.lines, 2)
	assert.Equal(t, uint64(109), rs.line(first+8), "the 9th request's wire line")
	assert.Equal(t, uint64(110), rs.line(first+9))
	assert.Equal(t, first+7, rs.line(first+7), "a request let go is named by its sequence")
	assert.Equal(t, int64(9+10), rs.pending(), "the bytes of the 9th and 10th, not answered")

	rs.lines = append(rs.lines, 111)
	rs.sum = append(rs.sum, rs.sum[len(rs.sum)-1]+11)
	assert.Equal(t, uint64(111), rs.line(first+10))
	assert.Equal(t, int64(9+10+11), rs.pending())
}
