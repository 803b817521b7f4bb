// Package test holds the end-to-end, golden and conformance tests of
// acpnorm: they drive the real gRPC service the way clients do.
package test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/replay"
	"github.com/acpnorm/acpnorm/internal/service"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from what the service produces now")

// inProcess serves the real service over an in-memory connection.
func inProcess(t *testing.T) pb.NormalizerServiceClient {
	t.Helper()
	svc, err := service.New(service.DefaultConfig(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	lis := bufconn.Listen(1 << 20)
	srv := service.NewServer(svc, service.DefaultServerOptions(), nil)
	go srv.Serve(lis)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); srv.GRPC.Stop() })
	return pb.NewNormalizerServiceClient(conn)
}

// recordings are the hand-picked recordings at the top of
// testdata/recordings, the ones most tests replay.
func recordings(t *testing.T) []string {
	t.Helper()
	return recordingsIn(t, "testdata/recordings")
}

// recordingsIn lists the recordings (*.ndjson) directly in dir; the
// harness's sidecars (*.meta.json, *.model.log) are not recordings.
func recordingsIn(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.ndjson"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recordings found in %s: %v", dir, err)
	}
	return files
}

func play(t *testing.T, c pb.NormalizerServiceClient, file string) []*pb.NormalizeResponse {
	t.Helper()
	lines, err := replay.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return playLines(t, c, lines, strings.TrimSuffix(filepath.Base(file), ".ndjson"))
}

// playLines plays lines as session through c, the dialect detected.
func playLines(t *testing.T, c pb.NormalizerServiceClient, lines []replay.Line, session string) []*pb.NormalizeResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resps, err := replay.Play(ctx, c, lines, replay.Options{SessionID: session, Dialect: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	return resps
}

// TestGolden replays every recording through the service and compares the
// final ShellExec of each command with testdata/golden. Run with -update to
// rewrite the goldens, then review the diff by eye: each block names the
// command and the reason for its outcome.
func TestGolden(t *testing.T) {
	goldens(t, "testdata/recordings", filepath.Join("testdata", "golden"))
}

// TestGoldenAgents does the same for the agent harness's recordings
// (test/agents: every agent, the newest and older builds, every scenario),
// with their goldens in testdata/golden/agents. The harness's own check
// holds a few facts of each step against its truth; the golden holds every
// field of every call, so any change in what a build's calls become shows.
// A session/load recording is played whole, both agent processes (the
// second one's records carry "agent_proc": 2) into one session, as
// acpnormd replay and the harness's check play it.
func TestGoldenAgents(t *testing.T) {
	goldens(t, "testdata/recordings/agents", filepath.Join("testdata", "golden", "agents"))
}

// goldens replays each recording in recDir through one in-process service
// (dialect auto, as acpnormd replay does) and compares its rendering with
// goldenDir/<name>.golden, or rewrites that with -update. A golden whose
// recording is gone fails the test, so none lingers unchecked.
func goldens(t *testing.T, recDir, goldenDir string) {
	c := inProcess(t)
	files := recordingsIn(t, recDir)
	names := map[string]bool{}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".ndjson")
		names[name] = true
		t.Run(name, func(t *testing.T) {
			resps := play(t, c, file)
			checkRevisions(t, resps)
			got := render(name, resps)
			path := filepath.Join(goldenDir, name+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./test -run %s -update to create it)", err, strings.SplitN(t.Name(), "/", 2)[0])
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from what the service produces now; run with -update and review the diff.\n%s", path, firstDiff(string(want), string(got)))
			}
		})
	}
	stale, _ := filepath.Glob(filepath.Join(goldenDir, "*.golden"))
	for _, g := range stale {
		if name := strings.TrimSuffix(filepath.Base(g), ".golden"); !names[name] {
			if *update {
				if err := os.Remove(g); err != nil {
					t.Error(err)
				}
				continue
			}
			t.Errorf("%s has no recording %s.ndjson in %s; remove it or run with -update", g, name, recDir)
		}
	}
}

// checkRevisions checks what every client relies on, for every revision of
// every call: numbering from 1 with no gap, nothing live after ENDED, whole
// texts on ENDED revisions, valid UTF-8 within the bound.
func checkRevisions(t *testing.T, resps []*pb.NormalizeResponse) {
	t.Helper()
	type seen struct {
		rev   uint32
		ended bool
	}
	calls := map[string]*seen{}
	limit := service.DefaultConfig().TextLimit
	for _, r := range resps {
		if fe := r.GetFrameError(); fe != nil {
			t.Errorf("frame error on a real recording: %v", fe)
			continue
		}
		x := r.GetShellExec()
		s := calls[x.GetToolCallId()]
		if s == nil {
			s = &seen{}
			calls[x.GetToolCallId()] = s
		}
		if x.GetRevision() != s.rev+1 {
			t.Errorf("%s: revision %d after %d", x.GetToolCallId(), x.GetRevision(), s.rev)
		}
		s.rev = x.GetRevision()
		ended := x.GetState() == pb.ShellState_SHELL_STATE_ENDED
		if s.ended && !ended {
			t.Errorf("%s: revision %d is %v after the call ended", x.GetToolCallId(), x.GetRevision(), x.GetState())
		}
		s.ended = s.ended || ended
		if !ended && x.GetOutcome() != pb.ShellOutcome_SHELL_OUTCOME_UNSPECIFIED {
			t.Errorf("%s: outcome %v before the end", x.GetToolCallId(), x.GetOutcome())
		}
		for _, txt := range []*pb.ShellText{x.GetOutput(), x.GetStdout(), x.GetStderr()} {
			if txt == nil {
				continue
			}
			if ended && txt.GetMode() != pb.TextMode_TEXT_MODE_REPLACE {
				t.Errorf("%s: ended revision with an %v text", x.GetToolCallId(), txt.GetMode())
			}
			if !utf8.ValidString(txt.GetText()) || len(txt.GetText()) > limit {
				t.Errorf("%s: text of %d bytes, valid UTF-8 %v", x.GetToolCallId(), len(txt.GetText()), utf8.ValidString(txt.GetText()))
			}
		}
	}
	for id, s := range calls {
		if !s.ended {
			t.Errorf("%s never ended although the session closed", id)
		}
	}
}

// render writes the goldens: per call, a header naming the command and why
// its outcome is what it is, then the final ShellExec as indented JSON.
// Texts over 2 KiB are shown as their head and tail plus a checksum.
func render(name string, resps []*pb.NormalizeResponse) []byte {
	calls, errs := replay.Fold(resps)
	return renderCalls(name, calls, errs)
}

func renderCalls(name string, calls []*replay.Call, errs []*pb.FrameError) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n# The final ShellExec of each shell command after folding every revision\n# as a client does. Regenerate: go test ./test -run TestGolden -update\n", name)
	for _, fe := range errs {
		fmt.Fprintf(&b, "\nframe error: %s\n", protojson.Format(fe))
	}
	for i, c := range calls {
		x := proto.Clone(c.Last).(*pb.ShellExec)
		exit := "unknown"
		if x.ExitCode != nil {
			exit = fmt.Sprint(x.GetExitCode())
		}
		fmt.Fprintf(&b, "\n## %d. %s\n# %s, exit %s: %s (%d revisions)\n", i+1, x.GetCommand(),
			strings.TrimPrefix(x.GetOutcome().String(), "SHELL_OUTCOME_"), exit, x.GetOutcomeReason(), c.Revisions)
		for _, txt := range []*pb.ShellText{x.GetOutput(), x.GetStdout(), x.GetStderr()} {
			if txt != nil {
				txt.Text = elide(txt.GetText())
			}
		}
		x.Sequence = 0 // line numbers would churn with every recording edit
		raw, _ := protojson.Marshal(x)
		var compact, pretty bytes.Buffer
		_ = json.Compact(&compact, raw)
		_ = json.Indent(&pretty, compact.Bytes(), "", "  ")
		b.Write(pretty.Bytes())
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func elide(s string) string {
	const keep = 1024
	if len(s) <= 2*keep {
		return s
	}
	head, tail := s[:keep], s[len(s)-keep:]
	for !utf8.ValidString(head) {
		head = head[:len(head)-1]
	}
	for !utf8.ValidString(tail) {
		tail = tail[1:]
	}
	return fmt.Sprintf("%s…[%d bytes elided; sha256 of the whole text %x]…%s", head, len(s)-len(head)-len(tail), sha256.Sum256([]byte(s)), tail)
}

func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d:\n want: %s\n  got: %s", i+1, w, g)
		}
	}
	return "(no line differs)"
}

// secondProcess is the part of a load recording from the second
// `initialize` on: what a client that attaches to the restarted agent sees.
func secondProcess(t *testing.T, lines []replay.Line) []replay.Line {
	t.Helper()
	n := 0
	for i, l := range lines {
		var m struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(l.Msg, &m) == nil && m.Method == "initialize" {
			if n++; n == 2 {
				return lines[i:]
			}
		}
	}
	t.Fatal("no second initialize")
	return nil
}

// replayedAlone plays the agent recording name's second process alone
// (secondProcess) through the service and returns its calls folded, as
// a client that attached only after the restart has them.
func replayedAlone(t *testing.T, name string) []*replay.Call {
	t.Helper()
	lines, err := replay.ReadFile(filepath.Join("testdata/recordings/agents", name+".ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	calls, errs := replay.Fold(playLines(t, inProcess(t), secondProcess(t, lines), "alone-"+name))
	if len(errs) > 0 {
		t.Fatalf("%s: frame errors: %v", name, errs)
	}
	return calls
}

// replayed is how a call of a replay played alone must read: its outcome
// (the enum's name), its exit code (nil: none) and its whole output.
type replayed struct {
	outcome string
	exit    *int32
	output  string
}

// checkReplayed reports where x does not read as w.
func checkReplayed(t *testing.T, x *pb.ShellExec, w replayed) {
	t.Helper()
	if got := x.GetOutcome().String(); got != w.outcome {
		t.Errorf("%s: outcome %s (%s), want %s", x.GetCommand(), got, x.GetOutcomeReason(), w.outcome)
	}
	switch {
	case w.exit == nil && x.ExitCode != nil:
		t.Errorf("%s: exit %d, want none", x.GetCommand(), *x.ExitCode)
	case w.exit != nil && x.ExitCode == nil:
		t.Errorf("%s: exit unknown, want %d", x.GetCommand(), *w.exit)
	case w.exit != nil && *x.ExitCode != *w.exit:
		t.Errorf("%s: exit %d, want %d", x.GetCommand(), *x.ExitCode, *w.exit)
	}
	if got := x.GetOutput().GetText(); got != w.output {
		t.Errorf("%s: output %q, want %q", x.GetCommand(), got, w.output)
	}
}
