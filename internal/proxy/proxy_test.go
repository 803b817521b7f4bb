package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/replay"
	"github.com/acpnorm/acpnorm/internal/service"
	"github.com/acpnorm/acpnorm/internal/testlog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// fakeAgent is the path of testdata/fakeagent, built once for the tests.
var fakeAgent string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "proxytest")
	if err != nil {
		panic(err)
	}
	fakeAgent = filepath.Join(dir, "fakeagent")
	if out, err := exec.Command("go", "build", "-o", fakeAgent, "./testdata/fakeagent").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the fake agent: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// notices collects what the proxy says.
type notices struct {
	mu   sync.Mutex
	msgs []string
}

func (n *notices) say(msg string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.msgs = append(n.msgs, msg)
}

func (n *notices) containing(s string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := 0
	for _, m := range n.msgs {
		if strings.Contains(m, s) {
			c++
		}
	}
	return c
}

// direct runs the fake agent without the proxy and returns its stdout and
// exit status.
func direct(t *testing.T, stdin []byte, args ...string) ([]byte, int) {
	t.Helper()
	cmd := exec.Command(fakeAgent, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout = &out
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.Bytes(), ee.ExitCode()
	}
	require.NoError(t, err)
	return out.Bytes(), 0
}

func runProxy(t *testing.T, cfg Config) Result {
	t.Helper()
	if cfg.MaxFrame == 0 {
		cfg.MaxFrame = DefaultMaxFrame
	}
	if cfg.QueueLines == 0 {
		cfg.QueueLines = DefaultQueueLines
	}
	if cfg.QueueBytes == 0 {
		cfg.QueueBytes = DefaultQueueBytes
	}
	if cfg.Stdin == nil {
		cfg.Stdin = bytes.NewReader(nil)
	}
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Run(ctx, cfg)
	require.NoError(t, err)
	return res
}

// wireLines reads a wire recording back as replay does.
func wireLines(t *testing.T, wire []byte) []replay.Line {
	t.Helper()
	lines, err := replay.Read(bytes.NewReader(wire))
	require.NoError(t, err)
	return lines
}

// The hostile agent writes a line in pieces, a line far over the frame
// limit, lines that are not JSON and a last line without a newline, then
// exits 3: the client gets exactly what a direct run writes, the proxy
// exits 3, and normalization gets only the JSON lines under the limit.
func TestRelayHostileAgent(t *testing.T) {
	const huge = 3 << 20
	want, wantStatus := direct(t, nil, "hostile", fmt.Sprint(huge))
	require.Equal(t, 3, wantStatus)

	var stdout, wire testlog.Buffer
	var said notices
	rec := &Recorder{Wire: &wire, Say: said.say}
	res := runProxy(t, Config{
		Command: []string{fakeAgent, "hostile", fmt.Sprint(huge)},
		Stdout:  &stdout, Recorder: rec, Say: said.say,
		MaxFrame: 1 << 20,
	})
	assert.Equal(t, 3, res.Status, "the agent's exit status is the proxy's")
	assert.True(t, bytes.Equal(want, stdout.Bytes()), "the relay changed the bytes: %d bytes direct, %d through the proxy", len(want), stdout.Bytes())
	assert.Equal(t, int64(1), res.Drops.TooBig, "the huge line is relayed, not normalized")
	assert.Greater(t, res.Drops.TooBigBytes, int64(huge))
	assert.Zero(t, res.Drops.Behind)

	st := rec.Stats()
	assert.Equal(t, int64(2), st.NotJSON, "the two lines that are not JSON are skipped")
	lines := wireLines(t, wire.Bytes())
	require.Len(t, lines, 2)
	assert.JSONEq(t, `{"jsonrpc":"2.0","method":"x/partial","params":{}}`, string(lines[0].Msg), "a line written in pieces is one frame")
	assert.JSONEq(t, `{"jsonrpc":"2.0","method":"x/last"}`, string(lines[1].Msg), "a last line without a newline is a frame")
	for _, l := range lines {
		assert.Equal(t, pb.Direction_DIRECTION_AGENT_TO_CLIENT, l.Dir)
	}
}

// The client's bytes reach the agent untouched (the echo agent sends them
// back), a huge line included.
func TestRelayClientToAgent(t *testing.T) {
	var in bytes.Buffer
	in.WriteString(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}` + "\n")
	in.WriteString("not json \x00 \xff\r\n")
	in.WriteString(`{"jsonrpc":"2.0","method":"x/big","params":{"pad":"` + strings.Repeat("é", 1<<20) + "\"}}\n")
	in.WriteString(`   {"jsonrpc":"2.0","id":2,"result":{}}   ` + "\r\n\n\n")
	var stdout, wire testlog.Buffer
	rec := &Recorder{Wire: &wire}
	res := runProxy(t, Config{Command: []string{fakeAgent, "echo"}, Stdin: bytes.NewReader(in.Bytes()), Stdout: &stdout, Recorder: rec})
	assert.Equal(t, 0, res.Status)
	assert.True(t, bytes.Equal(in.Bytes(), stdout.Bytes()), "the echo came back changed")

	lines := wireLines(t, wire.Bytes())
	require.Len(t, lines, 6, "three JSON lines each way")
	var dirs [3]int
	for _, l := range lines {
		dirs[l.Dir]++
	}
	assert.Equal(t, 3, dirs[pb.Direction_DIRECTION_CLIENT_TO_AGENT])
	assert.Equal(t, 3, dirs[pb.Direction_DIRECTION_AGENT_TO_CLIENT])
	assert.Equal(t, `{"jsonrpc":"2.0","id":2,"result":{}}`, string(lines[len(lines)-1].Msg), "white space around a line is not part of the frame")
}

// The consumer never holds more than the frame limit of a line, however
// long the line and however it is read.
func TestCutterBoundsMemory(t *testing.T) {
	const dir = pb.Direction_DIRECTION_AGENT_TO_CLIENT
	tt := newTee(time.Now(), 8, 1<<10, 1<<20, nil)
	var got []string
	feed := func(p []byte) {
		tt.take(chunk{dir: dir, b: append([]byte(nil), p...)})
		for len(tt.rest) > 0 {
			if l, ok := tt.cut(); ok {
				got = append(got, string(l.Msg))
			}
			require.LessOrEqual(t, cap(tt.cuts[dir].buf), 2<<10, "the consumer holds a line over the limit")
		}
	}
	chunk := bytes.Repeat([]byte("x"), 700)
	for range 10000 {
		feed(chunk)
	}
	feed([]byte("\n{}\n[1,\n2]"))
	tt.endDir(dir, 0)
	got = append(got, string(tt.tail[0].Msg))
	assert.Equal(t, []string{"{}", "[1,", "2]"}, got)
	assert.Equal(t, Drops{TooBig: 1, TooBigBytes: 7000000}, tt.dropped())
}

// Reads the queue has no room for are dropped whole; the consumer never
// hands out a line that lost bytes, and every line is either handed out
// intact or counted as dropped, however the reads cut the lines.
func TestGapsDropWholeLines(t *testing.T) {
	const dir = pb.Direction_DIRECTION_CLIENT_TO_AGENT
	var stream bytes.Buffer
	var want []string
	for i := range 500 {
		l := fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, strings.Repeat("z", i*37%300))
		want = append(want, l)
		stream.WriteString(l + "\n")
	}
	for _, size := range []int{1, 7, 64, 301, 4096} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			tt := newTee(time.Now(), 3, 1<<20, 1<<20, nil)
			f := tt.feeder(dir)
			tt.closeWhenDone()
			var got []string
			take := func(n int) { // what the consumer takes of the queue
				for range n {
					c := <-tt.q
					tt.take(c)
					for len(tt.rest) > 0 {
						if l, ok := tt.cut(); ok {
							got = append(got, string(l.Msg))
						}
					}
				}
			}
			b := stream.Bytes()
			for i := 0; len(b) > 0; i++ {
				n := min(size, len(b))
				f.feed(b[:n])
				b = b[n:]
				if i%5 == 0 {
					take(len(tt.q)) // the consumer keeps up now and then
				}
			}
			f.flush()
			for l, ok := tt.next(); ok; l, ok = tt.next() {
				got = append(got, string(l.Msg))
			}
			d := tt.dropped()
			require.Positive(t, d.Behind, "the queue of 3 reads must have overflowed")
			assert.Equal(t, int64(len(want)), int64(len(got))+d.Behind, "every line is handed out or counted as dropped")
			k := 0
			for _, g := range got { // what is handed out is whole lines, in order
				for k < len(want) && want[k] != g {
					k++
				}
				require.Less(t, k, len(want), "a line was handed out that was not sent whole: %q", g)
			}
		})
	}
}

// inProcess starts the real service; block, when set, holds every Normalize
// stream until it is closed (a stalled normalizer).
func inProcess(t *testing.T, block <-chan struct{}) (pb.NormalizerServiceClient, string) {
	t.Helper()
	svc, err := service.New(service.DefaultConfig(), nil, nil)
	require.NoError(t, err)
	srv := service.NewServer(svc, service.DefaultServerOptions(), nil)
	var gs *grpc.Server
	if block != nil {
		gs = grpc.NewServer(grpc.StreamInterceptor(func(s any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			select {
			case <-block:
			case <-ss.Context().Done():
				return ss.Context().Err()
			}
			return h(s, ss)
		}))
		pb.RegisterNormalizerServiceServer(gs, svc)
	} else {
		gs = srv.GRPC
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return pb.NewNormalizerServiceClient(conn), lis.Addr().String()
}

const sample = "../../cmd/acpnormd/sample/claude-agent-acp-0.101.0_terminal-meta.ndjson"

// client plays the client's side of a recording against the proxy: it
// writes each client->agent message once every agent->client message
// before it came back (each checked byte for byte), so the exchange keeps
// the recording's order.
func client(t *testing.T, file string, toAgent io.WriteCloser, fromAgent io.Reader) error {
	defer toAgent.Close()
	lines, err := replay.ReadFile(file)
	if err != nil {
		return err
	}
	in := bufio.NewReaderSize(fromAgent, 1<<20)
	for _, l := range lines {
		if l.Dir == pb.Direction_DIRECTION_CLIENT_TO_AGENT {
			if _, err := toAgent.Write(append(append([]byte(nil), l.Msg...), '\n')); err != nil {
				return err
			}
			continue
		}
		got, err := in.ReadBytes('\n')
		if err != nil {
			return fmt.Errorf("line %d: %w", l.Number, err)
		}
		if !bytes.Equal(bytes.TrimSuffix(got, []byte("\n")), l.Msg) {
			return fmt.Errorf("line %d: the client got %q, the agent sent %q", l.Number, got, l.Msg)
		}
	}
	toAgent.Close() // the session is over: the agent sees EOF and exits
	_, err = io.Copy(io.Discard, in)
	return err
}

// playSample runs the recording's agent behind the proxy with rec and the
// harness client in front.
func playSample(t *testing.T, rec *Recorder) Result {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	errc := make(chan error, 1)
	go func() { errc <- client(t, sample, inW, outR) }()
	res := runProxy(t, Config{Command: []string{fakeAgent, "play", sample}, Stdin: inR, Stdout: outW, Recorder: rec, Finish: 20 * time.Second})
	outW.Close()
	require.NoError(t, <-errc)
	return res
}

// replayed is what `acpnormd replay --json [--final]` prints for a
// recording, on a service of its own: every revision, or each call's folded
// final state.
func replayed(t *testing.T, wire []byte, session string, final bool) []*pb.ShellExec {
	t.Helper()
	c, _ := inProcess(t, nil)
	resps, err := replay.Play(context.Background(), c, wireLines(t, wire), replay.Options{SessionID: session, Dialect: "auto"})
	require.NoError(t, err)
	var out []*pb.ShellExec
	if final {
		calls, fes := replay.Fold(resps)
		require.Len(t, fes, 0, "frame errors")
		for _, c := range calls {
			out = append(out, c.Last)
		}
		return out
	}
	for _, r := range resps {
		require.Nil(t, r.GetFrameError())
		if x := r.GetShellExec(); x != nil {
			out = append(out, x)
		}
	}
	return out
}

func records(t *testing.T, out []byte) []*pb.ShellExec {
	t.Helper()
	var xs []*pb.ShellExec
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		x := &pb.ShellExec{}
		require.NoError(t, protojson.Unmarshal(line, x), "%s", line)
		xs = append(xs, x)
	}
	return xs
}

// sameExecs compares records in any order of calls (finals are written as
// calls end, replay lists them as they began).
func sameExecs(t *testing.T, want, got []*pb.ShellExec) {
	t.Helper()
	require.Len(t, got, len(want))
	byCall := map[string]*pb.ShellExec{}
	for _, x := range want {
		byCall[x.GetToolCallId()] = x
	}
	for _, x := range got {
		w := byCall[x.GetToolCallId()]
		require.NotNil(t, w, "call %s is not in replay's record", x.GetToolCallId())
		assert.True(t, proto.Equal(w, x), "call %s:\nreplay %v\nproxy  %v", x.GetToolCallId(), w, x)
	}
}

// The record the proxy writes is what replay makes of the wire recording
// it wrote, and that recording is the agent's recording, frame for frame.
func TestRecordEqualsReplayOfWire(t *testing.T) {
	for _, all := range []bool{false, true} {
		t.Run(fmt.Sprintf("all=%v", all), func(t *testing.T) {
			c, _ := inProcess(t, nil)
			var out, wire testlog.Buffer
			rec := &Recorder{Client: c, Service: "test", Dialect: "auto", Out: &out, Wire: &wire, AllRevisions: all}
			res := playSample(t, rec)
			require.Equal(t, 0, res.Status)
			st := rec.Stats()
			assert.Zero(t, st.FrameErrors)
			assert.Zero(t, st.Unsent)

			orig, err := replay.ReadFile(sample)
			require.NoError(t, err)
			got := wireLines(t, wire.Bytes())
			require.Len(t, got, len(orig))
			for i := range orig {
				assert.Equal(t, orig[i].Dir, got[i].Dir, "line %d", i+1)
				assert.Equal(t, string(orig[i].Msg), string(got[i].Msg), "line %d", i+1)
			}

			xs := records(t, out.Bytes())
			require.NotEmpty(t, xs)
			session := xs[0].GetSessionId()
			want := replayed(t, wire.Bytes(), session, !all)
			if all {
				require.Len(t, xs, len(want))
				for i := range want {
					assert.True(t, proto.Equal(want[i], xs[i]), "revision %d:\nreplay %v\nproxy  %v", i, want[i], xs[i])
				}
			} else {
				sameExecs(t, want, xs)
				for _, x := range xs {
					assert.Equal(t, pb.ShellState_SHELL_STATE_ENDED, x.GetState())
				}
			}
		})
	}
}

// A normalizer that takes nothing (its stream is held on purpose) never
// slows the relay: every byte is relayed, the drops are counted and said
// once.
func TestStalledNormalizer(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	c, _ := inProcess(t, block)
	const n, size = 20000, 1024
	want, _ := direct(t, nil, "flood", fmt.Sprint(n), fmt.Sprint(size))
	var stdout testlog.Buffer
	var said notices
	rec := &Recorder{Client: c, Service: "test", Out: io.Discard, Say: said.say}
	res := runProxy(t, Config{
		Command: []string{fakeAgent, "flood", fmt.Sprint(n), fmt.Sprint(size)},
		Stdout:  &stdout, Recorder: rec, Say: said.say,
		QueueLines: 64, QueueBytes: 64 * size, Finish: 200 * time.Millisecond,
	})
	assert.Equal(t, 0, res.Status)
	assert.True(t, bytes.Equal(want, stdout.Bytes()), "the relay lost or changed bytes while normalization was stalled")
	assert.Positive(t, res.Drops.Behind, "lines must have been dropped from normalization")
	assert.Equal(t, int64(n), res.Drops.Behind+rec.Stats().Frames, "every line is either taken or counted as dropped")
	assert.Equal(t, 1, said.containing("normalization is behind"), "the drops are said once: %q", said.msgs)
	assert.Equal(t, 1, said.containing("cut short"), "the end of the wait is said once: %q", said.msgs)
}

// A Recorder.Client (a NormalizerServiceClient, as the in-process engine
// is used) whose server is down: the relay goes on, the proxy says so
// once, and the frames are counted as not normalized. (`proxy --addr`
// uses Recorder.Remote, which reconnects: remote_test.go.)
func TestRemoteDown(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	lis.Close() // nothing listens there now
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()

	var said notices
	var out, wire testlog.Buffer
	rec := &Recorder{Client: pb.NewNormalizerServiceClient(conn), Service: "acpnormd at " + addr, Out: &out, Wire: &wire, Say: said.say}
	res := playSample(t, rec)
	assert.Equal(t, 0, res.Status)
	assert.Equal(t, 1, said.containing("normalization stopped: acpnormd at "+addr), "said once: %q", said.msgs)
	assert.Len(t, said.msgs, 1, "%q", said.msgs)
	st := rec.Stats()
	assert.Equal(t, st.Frames, st.Unsent, "no frame was normalized")
	assert.Empty(t, out.Bytes())
	assert.Len(t, wireLines(t, wire.Bytes()), int(st.Frames), "the wire recording is whole")
}

// A Recorder.Client on another server gets the frames: the record is the
// one the in-process normalizer makes.
func TestRemote(t *testing.T) {
	c, _ := inProcess(t, nil)
	var out, wire testlog.Buffer
	rec := &Recorder{Client: c, Service: "remote", Out: &out, Wire: &wire, Session: "dev-1"}
	playSample(t, rec)
	xs := records(t, out.Bytes())
	require.NotEmpty(t, xs)
	for _, x := range xs {
		assert.Equal(t, "dev-1", x.GetSessionId(), "--session names the session")
	}
	sameExecs(t, replayed(t, wire.Bytes(), "dev-1", true), xs)
}

// SIGINT and SIGTERM go to the agent; a signal death is 128+N.
func TestSignalForwarded(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			outR, outW := io.Pipe()
			sigs := make(chan os.Signal, 1)
			go func() {
				bufio.NewReader(outR).ReadBytes('\n') // the agent is ready
				sigs <- sig
				io.Copy(io.Discard, outR)
			}()
			inR, inW := io.Pipe()
			defer inW.Close()
			res := runProxy(t, Config{Command: []string{fakeAgent, "sleep"}, Stdin: inR, Stdout: outW, Signals: sigs})
			outW.Close()
			assert.Equal(t, 128+int(sig), res.Status)
		})
	}
}

// The agent runs with the proxy's environment and working directory.
func TestEnvironment(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("FAKE_ENV", "from the proxy")
	var stdout testlog.Buffer
	res := runProxy(t, Config{Command: []string{fakeAgent, "env"}, Stdout: &stdout})
	require.Equal(t, 0, res.Status)
	var got map[string]string
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &got))
	wd, err := os.Getwd()
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"cwd": wd, "env": "from the proxy"}, got)
}

// failWriter is a client that stopped reading.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, syscall.EPIPE }

// When the client stops reading, the agent's stdin is closed: the echo
// agent sees EOF and exits, and the proxy with it.
func TestClientGone(t *testing.T) {
	inR, inW := io.Pipe()
	go func() {
		inW.Write([]byte("{}\n"))
		// and never closes: only the failed write can end the run
	}()
	defer inW.Close()
	res := runProxy(t, Config{Command: []string{fakeAgent, "echo"}, Stdin: inR, Stdout: failWriter{}})
	assert.Equal(t, 0, res.Status)
}

// An agent that cannot be started is 127 (not found) or 126 (not
// executable), as shells say.
func TestStartFailure(t *testing.T) {
	notExec := filepath.Join(t.TempDir(), "agent")
	require.NoError(t, os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644))
	for _, tc := range []struct {
		cmd    string
		status int
	}{
		{"acpnorm-no-such-agent", 127},
		{filepath.Join(t.TempDir(), "missing"), 127},
		{notExec, 126},
	} {
		res, err := Run(context.Background(), Config{Command: []string{tc.cmd}, Stdin: bytes.NewReader(nil), Stdout: io.Discard, Stderr: io.Discard})
		assert.Error(t, err, tc.cmd)
		assert.Equal(t, tc.status, res.Status, tc.cmd)
	}
}

// The consumer does not wake up once per read of the relay: after it took
// all that was queued it waits a little (or until a lot is queued), so
// that one wake-up takes many reads; and it still gets every line, the
// last ones included, without the relay ever waiting for it.
func TestConsumerCoalescesWakeups(t *testing.T) {
	const n = 3000
	tt := newTee(time.Now(), DefaultQueueLines, 1<<20, DefaultQueueBytes, nil)
	f := tt.feeder(pb.Direction_DIRECTION_AGENT_TO_CLIENT)
	tt.closeWhenDone()
	go func() {
		defer f.flush()
		for i := range n {
			f.feed([]byte(fmt.Sprintf("{\"n\":%d}\n", i)))
			for t0 := time.Now(); time.Since(t0) < 20*time.Microsecond; { // a relay that reads as the agent writes
				runtime.Gosched()
			}
		}
	}()
	got := 0
	for l, ok := tt.next(); ok; l, ok = tt.next() {
		require.Equal(t, fmt.Sprintf(`{"n":%d}`, got), string(l.Msg))
		got++
	}
	assert.Equal(t, n, got)
	assert.Zero(t, tt.dropped().Behind)
	assert.Less(t, tt.waits, n/5, "the consumer woke up for about every read")
	t.Logf("%d reads, %d waits", n, tt.waits)
}

// The consumer's per-line work (cutting, the envelope scan, the wire) does
// not keep the relay's goroutines from a processor while it works through
// a backlog: it yields every few lines. With one processor, a goroutine
// that only wants to run now and then (as the relay's do between reads)
// runs many times while the consumer takes 20,000 queued lines, not only
// when the scheduler preempts the consumer (every 10 ms).
func TestConsumerYieldsToTheRelay(t *testing.T) {
	const n = 20000
	tt := newTee(time.Now(), n+2, 1<<20, 1<<30, nil)
	f := tt.feeder(pb.Direction_DIRECTION_AGENT_TO_CLIENT)
	tt.closeWhenDone()
	line := []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"in_progress"}}}` + "\n")
	for range n {
		f.feed(line)
	}
	f.flush()

	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var ran atomic.Int64
	done := make(chan struct{})
	go func() { // another goroutine that is runnable all along
		for {
			select {
			case <-done:
				return
			default:
			}
			ran.Add(1)
			runtime.Gosched()
		}
	}()
	rec := &Recorder{Wire: io.Discard}
	rec.consume(context.Background(), tt)
	close(done)
	require.Equal(t, int64(n), rec.Stats().Frames)
	assert.Greater(t, ran.Load(), int64(n/64), "the other goroutine hardly ran while the consumer worked")
	t.Logf("%d lines, the other goroutine ran %d times", n, ran.Load())
}

// A line in brackets that is not JSON (a log line such as "[INFO] ..." or
// one with NUL bytes) is not a frame: it is counted, and the wire
// recording stays NDJSON that replay reads, with the JSON lines only.
func TestBracketedLogLineNotRecorded(t *testing.T) {
	tt := newTee(time.Now(), DefaultQueueLines, 1<<20, DefaultQueueBytes, nil)
	f := tt.feeder(pb.Direction_DIRECTION_AGENT_TO_CLIENT)
	tt.closeWhenDone()
	f.feed([]byte("[\x00 not json]\n[INFO] starting [a] [b]\n[1,]\n"))
	f.feed([]byte(`[{"jsonrpc":"2.0","method":"x/batch"}]` + "\n"))
	f.feed([]byte(`{"jsonrpc":"2.0","method":"x/after"}` + "\n"))
	f.flush()
	var wire bytes.Buffer
	rec := &Recorder{Wire: &wire}
	rec.consume(context.Background(), tt)
	assert.Equal(t, int64(3), rec.Stats().NotJSON, "the bracketed log lines are not JSON")
	assert.Equal(t, int64(2), rec.Stats().Frames)
	lines, err := replay.Read(bytes.NewReader(wire.Bytes()))
	require.NoError(t, err, "replay cannot read the wire recording:\n%s", wire.Bytes())
	require.Len(t, lines, 2)
	assert.Equal(t, `[{"jsonrpc":"2.0","method":"x/batch"}]`, string(lines[0].Msg))
	assert.Equal(t, `{"jsonrpc":"2.0","method":"x/after"}`, string(lines[1].Msg))
}
