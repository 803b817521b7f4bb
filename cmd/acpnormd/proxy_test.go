package main

import (
	"bytes"
	"flag"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/replay"
	"github.com/acpnorm/acpnorm/internal/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

func TestProxyUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"proxy", "--out", "-"}, "proxy needs the agent's command"},
		{[]string{"proxy", "--", "cat"}, "proxy records nothing without --out, --wire or --addr"},
		{[]string{"proxy", "--out", "-", "--revisions", "some", "--", "cat"}, `--revisions "some": want final or all`},
		{[]string{"proxy", "--out", "-", "--dialect", "klingon", "--", "cat"}, `unknown dialect "klingon"`},
		{[]string{"proxy", "--out", "-", "--max-frame", "0", "--", "cat"}, "--max-frame 0 is below 1"},
		{[]string{"proxy", "--out", "-", "--queue-bytes", "10", "--max-frame", "100", "--", "cat"}, "--queue-bytes 10 is below --max-frame 100"},
		{[]string{"proxy", "--out", "-", "--finish-timeout", "0s", "--", "cat"}, "--finish-timeout 0s is not positive"},
		{[]string{"proxy", "--out", "-", "--stall-timeout", "0s", "--", "cat"}, "--stall-timeout 0s is not positive"},
		{[]string{"proxy", "--out", "-", "--drain-timeout", "-1s", "--", "cat"}, "--drain-timeout -1s is not positive"},
		{[]string{"proxy", "--out", "-", "--token-file", "t", "--", "cat"}, "are for a server named by --addr"},
		{[]string{"proxy", "--out", "x", "--wire", "x", "--", "cat"}, `--out and --wire name the same file "x"`},
		{[]string{"proxy", "--wire", "-", "--", "cat"}, "--wire takes a FILE, not -"},
		{[]string{"proxy", "--no-such", "--", "cat"}, "flag provided but not defined: -no-such"},
		{[]string{"proxy", "--addr", "127.0.0.1:1", "--buffer-bytes", "0", "--", "cat"}, "--buffer-bytes 0 is below 1"},
		{[]string{"proxy", "--addr", "127.0.0.1:1", "--buffer-bytes", "20000", "--", "cat"}, "--buffer-bytes 20000 is below --max-frame 8388608"},
		{[]string{"proxy", "--addr", " , ", "--", "cat"}, `--addr " , " names no address`},
	} {
		code, _, errOut := runCLI(tc.args...)
		assert.Equal(t, exitUsage, code, "%v: %s", tc.args, errOut)
		assert.Contains(t, errOut, tc.want, "%v", tc.args)
	}
}

// The proxy exits with the agent's status, as shells report it.
func TestProxyExitStatus(t *testing.T) {
	wire := filepath.Join(t.TempDir(), "wire.ndjson")
	for _, tc := range []struct {
		agent  []string
		status int
		stderr string
	}{
		{[]string{"sh", "-c", "exit 0"}, 0, ""},
		{[]string{"sh", "-c", "exit 3"}, 3, ""},
		{[]string{"sh", "-c", "echo oops >&2; exit 4"}, 4, "oops\n"},
		{[]string{"sh", "-c", "kill -KILL $$"}, 128 + 9, ""},
		{[]string{"acpnorm-no-such-agent"}, 127, "acpnormd proxy: starting acpnorm-no-such-agent: "},
	} {
		code, _, errOut := runCLI(append([]string{"proxy", "--wire", wire, "--"}, tc.agent...)...)
		assert.Equal(t, tc.status, code, "%v: %s", tc.agent, errOut)
		if tc.stderr == "" {
			assert.Empty(t, errOut, "%v", tc.agent)
		} else {
			assert.True(t, strings.HasPrefix(errOut, tc.stderr), "%v: stderr %q, want it to start %q", tc.agent, errOut, tc.stderr)
		}
	}
}

// --out writes what `acpnormd replay --json --final` makes of the --wire
// recording, with the session id the agent gave: with the engine in the
// proxy's process, and with a running acpnormd (--addr, through the Go
// session client; the first address is down and skipped).
func TestProxyOutIsReplayOfWire(t *testing.T) {
	t.Run("in-process", func(t *testing.T) { proxyOutIsReplayOfWire(t) })
	t.Run("addr", func(t *testing.T) {
		svc, err := service.New(service.DefaultConfig(), nil, nil)
		require.NoError(t, err)
		srv := service.NewServer(svc, service.DefaultServerOptions(), nil)
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		go srv.GRPC.Serve(lis)
		t.Cleanup(srv.GRPC.Stop)
		down, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		require.NoError(t, down.Close())
		proxyOutIsReplayOfWire(t, "--addr", down.Addr().String()+","+lis.Addr().String())
	})
}

// agentSideOf writes the agent's side of the sample recording (its
// messages, one a line) into dir and returns the file's path.
func agentSideOf(t *testing.T, dir string) string {
	t.Helper()
	lines, err := replay.Read(bytes.NewReader(sample))
	require.NoError(t, err)
	var b bytes.Buffer
	for _, l := range lines {
		if l.Dir == pb.Direction_DIRECTION_AGENT_TO_CLIENT {
			b.Write(l.Msg)
			b.WriteByte('\n')
		}
	}
	path := filepath.Join(dir, "agent.ndjson")
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
	return path
}

func proxyOutIsReplayOfWire(t *testing.T, args ...string) {
	dir := t.TempDir()
	agentSide := agentSideOf(t, dir)
	out, wire := filepath.Join(dir, "out.ndjson"), filepath.Join(dir, "wire.ndjson")

	code, _, errOut := runCLI(append(append([]string{"proxy", "--out", out, "--wire", wire}, args...), "--", "cat", agentSide)...)
	require.Equal(t, 0, code, errOut)
	if len(args) == 0 {
		assert.Empty(t, errOut)
	} else {
		// Only the line at exit, saying that it moved past the first address.
		assert.Regexp(t, `^acpnormd proxy: of \d+ frames: [1-9]\d* reconnect\(s\), 0 frame\(s\) sent again, 0 loss\(es\) rebuilt\n$`, errOut)
	}
	got := readExecs(t, mustRead(t, out))
	require.NotEmpty(t, got)
	session := got[0].GetSessionId()

	code, stdout, errOut := runCLI("replay", "--json", "--final", "--session", session, wire)
	require.Equal(t, 0, code, errOut)
	want := readExecs(t, []byte(stdout))
	byCall := func(xs []*pb.ShellExec) {
		sort.Slice(xs, func(i, j int) bool { return xs[i].GetToolCallId() < xs[j].GetToolCallId() })
	}
	byCall(got)
	byCall(want)
	require.Len(t, got, len(want))
	for i := range want {
		assert.True(t, proto.Equal(want[i], got[i]), "call %s:\nreplay %v\nproxy  %v", want[i].GetToolCallId(), want[i], got[i])
	}
}

// With --addr naming servers that are all down, the agent's output is
// relayed byte for byte; past --buffer-bytes the frames are dropped from
// normalization, said once, and counted in the line at exit.
func TestProxyRemoteDownPastTheBound(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	down := lis.Addr().String()
	require.NoError(t, lis.Close())
	agentSide := filepath.Join(t.TempDir(), "agent.ndjson")
	lines, err := replay.Read(bytes.NewReader(sample))
	require.NoError(t, err)
	var b bytes.Buffer
	for _, l := range lines {
		if l.Dir == pb.Direction_DIRECTION_AGENT_TO_CLIENT {
			b.Write(l.Msg)
			b.WriteByte('\n')
		}
	}
	require.NoError(t, os.WriteFile(agentSide, b.Bytes(), 0o644))

	code, stdout, errOut := runCLI("proxy", "--addr", down+","+down, "--buffer-bytes", "4096", "--max-frame", "4096", "--finish-timeout", "300ms", "--", "cat", agentSide)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, b.String(), stdout, "the relay changed the agent's bytes")
	assert.Equal(t, 1, strings.Count(errOut, "would pass --buffer-bytes 4096"), "said once: %s", errOut)
	assert.Regexp(t, `of \d+ frames: .*\d+ frames \(\d+ bytes\) dropped from normalization while --buffer-bytes of frames had no answer \(wire lines \d+ to \d+\)`, errOut)
	assert.Contains(t, errOut, "normalization was cut short")
	for _, line := range strings.Split(strings.TrimSpace(errOut), "\n") {
		assert.True(t, strings.HasPrefix(line, "acpnormd proxy: "), "a notice without the prefix: %q", line)
	}
}

func mustRead(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	return b
}

func readExecs(t *testing.T, b []byte) []*pb.ShellExec {
	t.Helper()
	var xs []*pb.ShellExec
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		x := &pb.ShellExec{}
		require.NoError(t, protojson.Unmarshal(line, x), "%s", line)
		xs = append(xs, x)
	}
	return xs
}

// docs/proxy.md documents every flag of proxy.
func TestProxyDocNamesEveryFlag(t *testing.T) {
	doc, err := os.ReadFile("../../docs/proxy.md")
	require.NoError(t, err)
	fs, _ := proxyFlagSet()
	fs.VisitAll(func(f *flag.Flag) {
		assert.Contains(t, string(doc), "`--"+f.Name, "docs/proxy.md does not document --%s", f.Name)
	})
}

// runProxyTo runs acpnormd in-process with stderr going to errOut (a
// buffer, or an *os.File as when the proxy's stderr is a file or a pipe)
// and returns its exit status and what stderr got.
func runProxyTo(t *testing.T, kind string, args ...string) (int, string) {
	t.Helper()
	switch kind {
	case "buffer":
		code, _, errOut := runCLI(args...)
		return code, errOut
	case "file":
		fh, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
		require.NoError(t, err)
		defer fh.Close()
		code := run(args, io.Discard, fh)
		return code, string(mustRead(t, fh.Name()))
	case "pipe":
		r, w, err := os.Pipe()
		require.NoError(t, err)
		got := make(chan []byte)
		go func() {
			b, _ := io.ReadAll(r)
			r.Close()
			got <- b
		}()
		code := run(args, io.Discard, w)
		w.Close()
		return code, string(<-got)
	}
	t.Fatalf("no stderr of kind %q", kind)
	return 0, ""
}

// A notice of the proxy, and a record written to stderr (--out -), start
// on a line of their own when the agent left its stderr in the middle of
// a line; the agent's bytes are otherwise as it wrote them. Whether the
// proxy's stderr is a buffer, a file or a pipe (an editor that runs the
// proxy as its agent reads its stderr from a pipe).
func TestProxyNoticeStartsItsOwnLine(t *testing.T) {
	dir := t.TempDir()
	agentSide := agentSideOf(t, dir)
	for _, kind := range []string{"buffer", "file", "pipe"} {
		t.Run(kind, func(t *testing.T) {
			// A line that is not JSON makes the notice at exit; the agent's
			// stderr ends without a newline.
			code, errOut := runProxyTo(t, kind, "proxy", "--out", filepath.Join(t.TempDir(), "out.ndjson"), "--",
				"sh", "-c", `echo not json; printf 'warming up... ' >&2`)
			require.Equal(t, 0, code, errOut)
			assert.Regexp(t, `^warming up\.\.\. \nacpnormd proxy: of \d+ frames: 1 lines that were not JSON relayed and skipped\n$`, errOut)

			// The records (--out -) come while the agent's last stderr line
			// is unfinished, and the line goes on after them.
			code, errOut = runProxyTo(t, kind, "proxy", "--out", "-", "--",
				"sh", "-c", `printf 'step 1' >&2; sleep 0.3; cat "$1"; sleep 0.3; printf ' done\n' >&2`, "sh", agentSide)
			require.Equal(t, 0, code, errOut)
			// Each line is a whole record or the agent's text alone, and
			// the agent's text is what it wrote, but for the newline
			// before the records that cut its line.
			var agent []string
			records := 0
			for _, l := range strings.Split(strings.TrimSuffix(errOut, "\n"), "\n") {
				if strings.HasPrefix(l, `{"sessionId":`) {
					require.NoError(t, protojson.Unmarshal([]byte(l), &pb.ShellExec{}), "a record glued to other text: %q", l)
					records++
					continue
				}
				assert.NotContains(t, l, "{", "a record glued to the agent's line: %q", l)
				agent = append(agent, l)
			}
			assert.Greater(t, records, 0, "%q", errOut)
			assert.Equal(t, "step 1 done", strings.Join(agent, ""), "the agent's bytes, but for the newline before the records")
		})
	}
}
