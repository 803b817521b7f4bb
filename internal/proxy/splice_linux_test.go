package proxy

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/testlog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// clientPipe is one of the client's ends as a real client hands it over:
// a pipe, non-blocking (as Go makes them, in Go's poller) or blocking (as
// an inherited stdin usually is, waited on with poll(2)).
func clientPipe(t *testing.T, blocking bool) (r, w *os.File) {
	t.Helper()
	if !blocking {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		return r, w
	}
	var p [2]int
	require.NoError(t, unix.Pipe2(p[:], unix.O_CLOEXEC))
	return os.NewFile(uintptr(p[0]), "|0"), os.NewFile(uintptr(p[1]), "|1")
}

// runPiped runs the proxy with pipes for the client's ends: it writes in
// and closes it (unless keepOpen), and returns all the proxy wrote.
func runPiped(t *testing.T, blocking, keepOpen bool, in []byte, cfg Config) ([]byte, Result) {
	t.Helper()
	inR, inW := clientPipe(t, blocking)
	outR, outW := clientPipe(t, blocking)
	defer inR.Close()
	defer inW.Close()
	defer outR.Close()
	go func() {
		inW.Write(in)
		if !keepOpen {
			inW.Close()
		}
	}()
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(outR)
		got <- b
	}()
	cfg.Stdin, cfg.Stdout = inR, outW
	res := runProxy(t, cfg)
	outW.Close()
	return <-got, res
}

// binary is client input that is not all JSON: NUL bytes, invalid UTF-8,
// \r, ANSI escapes, blank lines, a line of huge bytes spanning many reads
// and pipes, and a last line without a newline.
func binary(huge int) []byte {
	var in bytes.Buffer
	in.WriteString(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}` + "\n")
	in.WriteString("not json \x00\x00 \xff\xfe \x1b[31mred\x1b[0m\r\n\n\n")
	in.WriteString(`{"jsonrpc":"2.0","method":"x/big","params":{"pad":"` + strings.Repeat("é\\u0000", huge/8) + "\"}}\n")
	in.WriteString(strings.Repeat("\x00", 3<<20) + "\n") // NUL bytes over three pipes' worth
	in.WriteString(`   {"jsonrpc":"2.0","id":2,"result":{}}   ` + "\r\n")
	in.WriteString(`{"jsonrpc":"2.0","method":"x/last"}`)
	return in.Bytes()
}

// With pipes on both of the client's ends the relay splices, and the bytes
// both ways are exactly the client's (the echo agent sends them back), NUL
// bytes, invalid UTF-8 and a line over every pipe's size included; the
// wire recording has every JSON line of both directions, in order.
func TestSpliceRelayByteExact(t *testing.T) {
	require.True(t, spliceWorks(), "this system does not tee and splice pipes")
	for _, blocking := range []bool{false, true} {
		t.Run(fmt.Sprintf("blocking=%v", blocking), func(t *testing.T) {
			in := binary(4 << 20)
			var wire testlog.Buffer
			rec := &Recorder{Wire: &wire}
			out, res := runPiped(t, blocking, false, in, Config{Command: []string{fakeAgent, "echo"}, Recorder: rec})
			assert.Equal(t, 0, res.Status)
			assert.True(t, bytes.Equal(in, out), "the echo came back changed: %d bytes in, %d out", len(in), len(out))
			// What the consumer's pipe had no room for was copied.
			assert.Positive(t, res.spliced, "the relay spliced")
			assert.LessOrEqual(t, res.spliced, int64(2*len(in)))
			assert.Zero(t, res.Drops.Behind)
			assert.Zero(t, res.Drops.TooBig)

			lines := wireLines(t, wire.Bytes())
			var got []string
			for _, l := range lines {
				got = append(got, fmt.Sprintf("%v %.40s", l.Dir, l.Msg))
			}
			var want []string
			for _, m := range []string{
				`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`,
				`{"jsonrpc":"2.0","method":"x/big","params":{"pad":"` + strings.Repeat("é\\u0000", 8),
				`{"jsonrpc":"2.0","id":2,"result":{}}`,
				`{"jsonrpc":"2.0","method":"x/last"}`,
			} {
				for _, d := range []pb.Direction{pb.Direction_DIRECTION_CLIENT_TO_AGENT, pb.Direction_DIRECTION_AGENT_TO_CLIENT} {
					want = append(want, fmt.Sprintf("%v %.40s", d, m))
				}
			}
			// Each line goes to the agent before its echo comes back; the
			// lines of one direction keep their order.
			byDir := func(ss []string, d pb.Direction) []string {
				var r []string
				for _, s := range ss {
					if strings.HasPrefix(s, d.String()) {
						r = append(r, s)
					}
				}
				return r
			}
			for _, d := range []pb.Direction{pb.Direction_DIRECTION_CLIENT_TO_AGENT, pb.Direction_DIRECTION_AGENT_TO_CLIENT} {
				assert.Equal(t, byDir(want, d), byDir(got, d))
			}
			for i, l := range lines {
				if l.Dir == pb.Direction_DIRECTION_AGENT_TO_CLIENT {
					before := byDir(got[:i], pb.Direction_DIRECTION_CLIENT_TO_AGENT)
					after := byDir(got[:i+1], pb.Direction_DIRECTION_AGENT_TO_CLIENT)
					assert.GreaterOrEqual(t, len(before), len(after), "an echo was recorded before the line it echoes")
				}
			}
			for _, l := range lines {
				if bytes.Contains(l.Msg, []byte(`"x/big"`)) {
					assert.Len(t, l.Msg, len(`{"jsonrpc":"2.0","method":"x/big","params":{"pad":"`)+len("é\\u0000")*((4<<20)/8)+3, "the big line is whole")
				}
			}
		})
	}
}

// The agent's bytes reach a piped client exactly, its exit status is the
// proxy's, and normalization gets what it gets with the copying relay.
func TestSpliceHostileAgent(t *testing.T) {
	const huge = 3 << 20
	want, wantStatus := direct(t, nil, "hostile", fmt.Sprint(huge))
	require.Equal(t, 3, wantStatus)
	var wire testlog.Buffer
	rec := &Recorder{Wire: &wire}
	out, res := runPiped(t, true, false, nil, Config{Command: []string{fakeAgent, "hostile", fmt.Sprint(huge)}, Recorder: rec, MaxFrame: 1 << 20})
	assert.Equal(t, 3, res.Status, "the agent's exit status is the proxy's")
	assert.True(t, bytes.Equal(want, out), "the relay changed the bytes: %d bytes direct, %d through the proxy", len(want), len(out))
	assert.Positive(t, res.spliced, "the relay spliced")
	assert.Equal(t, int64(1), res.Drops.TooBig, "the huge line is relayed, not normalized")
	assert.Zero(t, res.Drops.Behind)
	assert.Equal(t, int64(2), rec.Stats().NotJSON)
	assert.Len(t, wireLines(t, wire.Bytes()), 2)
}

// A stalled normalizer with piped ends: the consumer's pipe fills, then
// the queue, and the relay goes on all the same; every line is normalized
// or counted dropped, and the drops are said once.
func TestSpliceStalledNormalizer(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	c, _ := inProcess(t, block)
	const n, size = 20000, 1024
	want, _ := direct(t, nil, "flood", fmt.Sprint(n), fmt.Sprint(size))
	var said notices
	rec := &Recorder{Client: c, Service: "test", Out: io.Discard, Say: said.say}
	out, res := runPiped(t, false, false, nil, Config{
		Command:  []string{fakeAgent, "flood", fmt.Sprint(n), fmt.Sprint(size)},
		Recorder: rec, Say: said.say,
		QueueLines: 64, QueueBytes: 64 * size, Finish: 200 * time.Millisecond,
	})
	assert.Equal(t, 0, res.Status)
	assert.True(t, bytes.Equal(want, out), "the relay lost or changed bytes while normalization was stalled")
	assert.Positive(t, res.spliced, "the relay spliced until the consumer's pipe was full")
	assert.Less(t, res.spliced, int64(len(want)), "then it copied onto the queue, then dropped")
	assert.Positive(t, res.Drops.Behind, "lines must have been dropped from normalization")
	assert.Equal(t, int64(n), res.Drops.Behind+rec.Stats().Frames, "every line is either taken or counted as dropped")
	assert.Equal(t, 1, said.containing("normalization is behind"), "the drops are said once: %q", said.msgs)
}

// A consumer that is slow but does not stop: the relay never waits for it,
// and each line reaches the wire recording whole or is counted dropped,
// whether it went through the consumer's pipe or was copied when the pipe
// was full.
func TestSpliceSlowConsumer(t *testing.T) {
	const n, size = 3000, 4096
	want, _ := direct(t, nil, "flood", fmt.Sprint(n), fmt.Sprint(size))
	wire := &slowWriter{d: 2 * time.Millisecond}
	rec := &Recorder{Wire: wire}
	out, res := runPiped(t, false, false, nil, Config{
		Command:  []string{fakeAgent, "flood", fmt.Sprint(n), fmt.Sprint(size)},
		Recorder: rec, QueueLines: 256, QueueBytes: 1 << 20,
	})
	assert.Equal(t, 0, res.Status)
	assert.True(t, bytes.Equal(want, out))
	lines := wireLines(t, wire.Bytes())
	assert.Equal(t, int64(n), res.Drops.Behind+int64(len(lines)), "every line is either recorded or counted as dropped")
	wantLine := bytes.TrimSpace(want[:bytes.IndexByte(want, '\n')])
	for _, l := range lines {
		require.Equal(t, wantLine, l.Msg, "a recorded line is whole")
	}
}

// slowWriter takes d per write.
type slowWriter struct {
	testlog.Buffer
	d time.Duration
}

func (s *slowWriter) Write(p []byte) (int, error) {
	time.Sleep(s.d)
	return s.Buffer.Write(p)
}

// The client that stops reading (its read end closed): the agent's stdin
// is closed, the echo agent ends, and the proxy with it, as with the
// copying relay.
func TestSpliceClientGone(t *testing.T) {
	inR, inW := clientPipe(t, true)
	outR, outW := clientPipe(t, true)
	defer inW.Close()
	defer inR.Close()
	defer outW.Close()
	go func() {
		inW.Write([]byte("{}\n"))
		// and never closes: only the failed write can end the run
	}()
	outR.Close()
	res := runProxy(t, Config{Command: []string{fakeAgent, "echo"}, Stdin: inR, Stdout: outW})
	assert.Equal(t, 0, res.Status)
}

// When a client's end is not a pipe, the relay copies, as before.
func TestCopyRelayWhenNotPipes(t *testing.T) {
	in := binary(1 << 20)
	inR, inW, err := os.Pipe()
	require.NoError(t, err)
	defer inR.Close()
	go func() { inW.Write(in); inW.Close() }()
	outFile, err := os.Create(t.TempDir() + "/out")
	require.NoError(t, err)
	defer outFile.Close()
	res := runProxy(t, Config{Command: []string{fakeAgent, "echo"}, Stdin: inR, Stdout: outFile})
	assert.Equal(t, 0, res.Status)
	assert.Zero(t, res.spliced, "stdout is a file: the relay copies")
	got, err := os.ReadFile(outFile.Name())
	require.NoError(t, err)
	assert.True(t, bytes.Equal(in, got))
}

// slowClient is a client that reads the proxy's stdout slowly
// (slowReader) and gives it an empty stdin: a pipe when splice is set (the
// splicing relay, both ends pipes), else a reader (the copying relay). got
// has what it read once outW is closed.
func slowClient(t *testing.T, splice bool) (stdin io.Reader, outW *os.File, got <-chan []byte) {
	t.Helper()
	outR, outW := clientPipe(t, false)
	t.Cleanup(func() { outR.Close() })
	got = slowReader(outR)
	stdin = bytes.NewReader(nil)
	if splice {
		inR, inW := clientPipe(t, false)
		t.Cleanup(func() { inR.Close() })
		inW.Close()
		stdin = inR
	}
	return stdin, outW, got
}

// slowReader reads r as a slow client does, 64 KiB every 250 ms (a 1 MiB
// pipe's worth takes 4 s, twice the proxy's grace after the agent exits),
// and returns all it read.
func slowReader(r io.Reader) <-chan []byte {
	got := make(chan []byte, 1)
	go func() {
		var all bytes.Buffer
		buf := make([]byte, 64<<10)
		for {
			time.Sleep(250 * time.Millisecond)
			n, err := r.Read(buf)
			all.Write(buf[:n])
			if err != nil {
				got <- all.Bytes()
				return
			}
		}
	}()
	return got
}

// The agent writes more than its pipe holds and exits while the client
// reads slowly: every byte reaches the client, however long after the
// agent's exit it takes, with the splicing relay (both ends pipes) and the
// copying one (stdin not a pipe), and the wire has every line.
func TestSlowClientGetsAllAfterExit(t *testing.T) {
	const n, size = 1500, 1000 // 1.5 MB: over the 1 MiB pipe
	want, _ := direct(t, nil, "flood", fmt.Sprint(n), fmt.Sprint(size))
	for _, splice := range []bool{true, false} {
		t.Run(fmt.Sprintf("splice=%v", splice), func(t *testing.T) {
			stdin, outW, got := slowClient(t, splice)
			var wire testlog.Buffer
			rec := &Recorder{Wire: &wire}
			res := runProxy(t, Config{Command: []string{fakeAgent, "flood", fmt.Sprint(n), fmt.Sprint(size)}, Stdin: stdin, Stdout: outW, Recorder: rec})
			outW.Close()
			out := <-got
			assert.Equal(t, 0, res.Status)
			assert.Equal(t, len(want), len(out), "bytes the agent wrote, bytes the client got")
			assert.Equal(t, sha256.Sum256(want), sha256.Sum256(out), "the client got other bytes than the agent wrote")
			if splice {
				assert.Positive(t, res.spliced, "the relay spliced")
			} else {
				assert.Zero(t, res.spliced, "the relay copied")
			}
			assert.Equal(t, n, len(wireLines(t, wire.Bytes())), "the wire has every line")
			assert.Zero(t, rec.Stats().NotJSON, "no line was cut")
		})
	}
}

// A child of the agent that holds its stdout open and writes nothing does
// not keep the proxy alive: it ends a grace after the agent, with the
// agent's last line relayed.
func TestOrphanHoldingStdout(t *testing.T) {
	for _, splice := range []bool{true, false} {
		t.Run(fmt.Sprintf("splice=%v", splice), func(t *testing.T) {
			outR, outW := clientPipe(t, false)
			defer outR.Close()
			got := make(chan []byte, 1)
			go func() {
				b, _ := io.ReadAll(outR)
				got <- b
			}()
			var stdin io.Reader = bytes.NewReader(nil)
			if splice {
				inR, inW := clientPipe(t, false)
				defer inR.Close()
				inW.Close()
				stdin = inR
			}
			start := time.Now()
			res := runProxy(t, Config{Command: []string{fakeAgent, "orphan", "8s"}, Stdin: stdin, Stdout: outW})
			took := time.Since(start)
			outW.Close()
			assert.Equal(t, 0, res.Status)
			assert.Less(t, took, stdoutGrace+3*time.Second, "the orphan kept the proxy alive")
			assert.Equal(t, `{"jsonrpc":"2.0","method":"x/orphaned"}`+"\n", string(<-got))
		})
	}
}

// A signal while a slow client is still being sent the agent's last output
// ends the relay after the write in progress: the proxy does not wait for
// the client to take what is left in the pipe, and what the client got is
// a prefix of what the agent wrote.
func TestSignalEndsDrain(t *testing.T) {
	const n, size = 1500, 1000
	want, _ := direct(t, nil, "flood", fmt.Sprint(n), fmt.Sprint(size))
	outR, outW := clientPipe(t, false)
	defer outR.Close()
	got := slowReader(outR)
	// The signal comes once the agent has exited (a loaded machine may
	// take more than a second to start it), while the client still reads.
	done := filepath.Join(t.TempDir(), "done")
	sigs := make(chan os.Signal, 1)
	go func() {
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(done); err == nil {
				break
			}
		}
		time.Sleep(200 * time.Millisecond) // the shell's own exit
		sigs <- unix.SIGTERM
	}()
	var said notices
	agent := fmt.Sprintf("%q flood %d %d && : > %q", fakeAgent, n, size, done)
	res := runProxy(t, Config{Command: []string{"sh", "-c", agent}, Stdout: outW, Signals: sigs, Say: said.say})
	outW.Close()
	out := <-got
	assert.Equal(t, 0, res.Status, "the agent had exited")
	assert.Less(t, len(out), len(want), "the proxy waited for the slow client to take it all after the signal")
	assert.True(t, bytes.HasPrefix(want, out), "the client got other bytes than the agent wrote")
	assert.Equal(t, 1, said.containing("dropped"), "the drop is said: %q", said.msgs)
}
