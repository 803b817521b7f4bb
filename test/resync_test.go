package test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/replay"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// A client whose stream breaks mid-call loses the revisions still in
// flight. When it reconnects, the first revision of each call on the new
// stream carries the whole bounded text (REPLACE), so folding what it got
// makes it whole again: the live texts equal those of a client that never
// lost anything, and the end result equals the golden.
func TestReconnectMidCallMakesTheClientWhole(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	compared := 0
	for _, file := range recordings(t) {
		name := strings.TrimSuffix(filepath.Base(file), ".ndjson")
		lines := readLines(t, file)
		for _, cut := range []int{len(lines) / 3, len(lines) / 2, 2 * len(lines) / 3} {
			end := min(cut+10, len(lines))
			c := inProcess(t) // a fresh service: the session id is the golden's
			sid := name
			playOn := func(sid string, part []replay.Line, keepOpen bool) []*pb.NormalizeResponse {
				t.Helper()
				resps, err := replay.Play(ctx, c, part, replay.Options{SessionID: sid, Dialect: "auto", KeepOpen: keepOpen})
				if err != nil {
					t.Fatalf("%s: %v", sid, err)
				}
				return resps
			}
			// The first stream: its last few live revisions never reach
			// the client (they were queued when the stream broke).
			first := playOn(sid, lines[:cut], true)
			kept := dropLastExecs(first, 3)
			// The reconnected stream goes on with the same session.
			second := playOn(sid, lines[cut:end], true)
			// What a client that lost nothing holds at the same point.
			want := byCall(foldAcross(playOn(sid+"/reference", lines[:end], true)))
			got := byCall(foldAcross(append(append([]*pb.NormalizeResponse{}, kept...), second...)))
			for _, call := range foldAcross(second) {
				id := call.Last.GetToolCallId()
				w, g := want[id], got[id]
				for _, f := range []struct {
					name      string
					want, got *pb.ShellText
				}{{"output", w.GetOutput(), g.GetOutput()}, {"stdout", w.GetStdout(), g.GetStdout()}, {"stderr", w.GetStderr(), g.GetStderr()}} {
					if !proto.Equal(f.want, f.got) {
						t.Errorf("%s cut at line %d, call %s after reconnecting: %s is %d bytes ending %q, a client that lost nothing has %d bytes ending %q", sid, cut, id, f.name, len(f.got.GetText()), tail(f.got.GetText()), len(f.want.GetText()), tail(f.want.GetText()))
					}
				}
				compared++
			}
			// The rest of the recording on the same stream, then close:
			// the folded result is the golden.
			rest := playOn(sid, lines[end:], false)
			all := append(append(kept, second...), rest...)
			golden, err := os.ReadFile(filepath.Join("testdata", "golden", name+".golden"))
			require.NoError(t, err)
			if g, w := withoutRevisionCounts(renderCalls(name, foldAcross(all), nil)), withoutRevisionCounts(golden); g != w {
				t.Errorf("%s cut at line %d: folded result after reconnecting differs from the golden:\n%s", sid, cut, firstDiff(w, g))
			}
		}
	}
	if compared < 5 {
		t.Fatalf("only %d calls were live across a reconnect; pick other cut points", compared)
	}
}

func readLines(t *testing.T, file string) []replay.Line {
	t.Helper()
	lines, err := replay.ReadFile(file)
	require.NoError(t, err)
	return lines
}

// dropLastExecs drops the last n live (not ENDED) ShellExec responses after
// the first of their call (which fixes the order of calls in a fold): the
// calls they belong to get more revisions later, at the latest when the
// session closes. (A lost ENDED revision of a call that never changes again
// cannot be resent: nothing new is made for it.)
func dropLastExecs(resps []*pb.NormalizeResponse, n int) []*pb.NormalizeResponse {
	out := append([]*pb.NormalizeResponse{}, resps...)
	for i := len(out) - 1; i >= 0 && n > 0; i-- {
		if x := out[i].GetShellExec(); x != nil && x.GetState() != pb.ShellState_SHELL_STATE_ENDED && x.GetRevision() > 1 {
			out = append(out[:i], out[i+1:]...)
			n--
		}
	}
	return out
}

// foldAcross folds revisions as a client that reconnected does: in order,
// APPEND appends and REPLACE replaces, and a gap in the numbering (the
// revisions lost with the old stream) is expected. (fold.Folder reports
// such a gap as an error.)
func foldAcross(resps []*pb.NormalizeResponse) []*replay.Call {
	var calls []*replay.Call
	byID := map[string]*replay.Call{}
	for _, r := range resps {
		x := r.GetShellExec()
		if x == nil {
			continue
		}
		c := byID[x.GetToolCallId()]
		if c == nil {
			c = &replay.Call{Last: &pb.ShellExec{}}
			byID[x.GetToolCallId()] = c
			calls = append(calls, c)
		}
		c.Revisions++
		held := c.Last
		c.Last = proto.Clone(x).(*pb.ShellExec)
		c.Last.Output = foldText(held.GetOutput(), x.GetOutput())
		c.Last.Stdout = foldText(held.GetStdout(), x.GetStdout())
		c.Last.Stderr = foldText(held.GetStderr(), x.GetStderr())
	}
	return calls
}

func foldText(held, next *pb.ShellText) *pb.ShellText {
	if next == nil {
		return held
	}
	t := proto.Clone(next).(*pb.ShellText)
	if next.GetMode() == pb.TextMode_TEXT_MODE_APPEND && held != nil {
		t.Text = held.GetText() + next.GetText()
	}
	t.Mode = pb.TextMode_TEXT_MODE_REPLACE
	return t
}

func byCall(calls []*replay.Call) map[string]*pb.ShellExec {
	m := map[string]*pb.ShellExec{}
	for _, c := range calls {
		m[c.Last.GetToolCallId()] = c.Last
	}
	return m
}

var revisionCount = regexp.MustCompile(`\(\d+ revisions\)`)

func withoutRevisionCounts(b []byte) string {
	return revisionCount.ReplaceAllString(string(b), "(revisions)")
}
