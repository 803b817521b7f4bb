package service

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/acpnorm/acpnorm/bench/load"
	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/benchcpu"
	"github.com/acpnorm/acpnorm/internal/replay"
	"github.com/stretchr/testify/require"
)

var (
	classesOnce  sync.Once
	classNames   []string
	classFrames  [][]load.Frame
	classesError error
)

// pathClasses returns the frames of every recording in
// test/testdata/recordings and of the generated Grok-like commands, read
// and generated once per test binary.
func pathClasses(b *testing.B) ([]string, [][]load.Frame) {
	b.Helper()
	classesOnce.Do(func() { classNames, classFrames, classesError = readClasses() })
	if classesError != nil {
		b.Fatal(classesError)
	}
	return classNames, classFrames
}

func readClasses() (names []string, frames [][]load.Frame, err error) {
	files, _ := filepath.Glob("../../test/testdata/recordings/*.ndjson")
	for _, file := range files {
		lines, err := replay.ReadFile(file)
		if err != nil {
			return nil, nil, err
		}
		var fs []load.Frame
		for _, l := range lines {
			fs = append(fs, load.Frame{Dir: l.Dir, Msg: l.Msg})
		}
		names = append(names, strings.TrimSuffix(filepath.Base(file), ".ndjson"))
		frames = append(frames, fs)
	}
	for _, arrays := range []bool{false, true} {
		g := load.GrokConfig{Snapshots: 100, FinalBytes: 150 << 10, ByteArrays: arrays}
		names = append(names, g.Name())
		frames = append(frames, load.Grok(g))
	}
	return names, frames, nil
}

// BenchmarkServicePath holds the whole per-frame work of the service (read
// the frame with the session's dialect, accumulate, build the
// NormalizeResponses) against encoding/json decoding the same frames into
// map[string]any. One op is one recording: every frame of it, both
// directions, on a fresh session, then SessionClosed. gRPC's own work
// (framing, protobuf marshalling) is not in either.
func BenchmarkServicePath(b *testing.B) {
	names, all := pathClasses(b)
	for i, name := range names {
		frames := all[i]
		var size int64
		reqs := make([]*pb.NormalizeRequest, len(frames))
		for j, f := range frames {
			size += int64(len(f.Msg))
			reqs[j] = &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{
				Dialect: "auto", Sequence: uint64(j + 1), Direction: f.Dir, Message: f.Msg,
			}}}
		}
		for _, finals := range []pb.FinalTexts{pb.FinalTexts_FINAL_TEXTS_WHOLE, pb.FinalTexts_FINAL_TEXTS_CHANGES} {
			variant := "/service"
			// d is nil for whole finals, as for an in-process caller.
			var d *delivered
			if finals == pb.FinalTexts_FINAL_TEXTS_CHANGES {
				variant = "/service-final-changes"
				d = newDelivered()
				d.setOptions(&pb.StreamOptions{FinalTexts: finals})
			}
			benchPath(b, name+variant, reqs, size, d)
		}
		b.Run(name+"/generic-map", func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			cpu := benchcpu.Now()
			for b.Loop() {
				for _, f := range frames {
					var v map[string]any
					require.NoError(b, json.Unmarshal(f.Msg, &v))
				}
			}
			benchcpu.Report(b, cpu)
		})
	}
}

// benchPath is one service variant of BenchmarkServicePath: reqs applied
// on a fresh session per op, as a stream that carried d would (nil: an
// in-process caller). It reports wire/output, the text bytes the
// revisions carry over the output bytes of the calls they end.
func benchPath(b *testing.B, name string, reqs []*pb.NormalizeRequest, size int64, d *delivered) {
	b.Run(name, func(b *testing.B) {
		ss := newSessions(DefaultConfig(), NewMetrics(nil), nil)
		ctx := context.Background()
		// wire counts the text bytes the revisions carry, real the
		// bytes of output of the calls (the last total_bytes each text
		// of each call showed).
		var wire, real int64
		totals := map[string]int64{}
		emit := func(out *pb.NormalizeResponse) error {
			if fe := out.GetFrameError(); fe != nil {
				return fmt.Errorf("%s: %s", name, fe.GetMessage())
			}
			x := out.GetShellExec()
			for i, t := range []*pb.ShellText{x.GetOutput(), x.GetStdout(), x.GetStderr()} {
				if t != nil {
					wire += int64(len(t.GetText()))
					totals[fmt.Sprint(x.GetToolCallId(), i)] = t.GetTotalBytes()
				}
			}
			return nil
		}
		feed := ss.newFeeder(ctx, d, emit)
		b.SetBytes(size)
		b.ReportAllocs()
		n := 0
		cpu := benchcpu.Now()
		for b.Loop() {
			n++
			sid := fmt.Sprintf("bench-%d", n)
			for _, r := range reqs {
				r.GetFrame().SessionId = sid
				if _, err := feed.handle(r, nil); err != nil {
					b.Fatal(err)
				}
			}
			closed := &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: sid}}}
			if _, err := feed.handle(closed, nil); err != nil {
				b.Fatal(err)
			}
			for _, n := range totals {
				real += n
			}
			clear(totals)
		}
		benchcpu.Report(b, cpu)
		if real > 0 {
			b.ReportMetric(float64(wire)/float64(real), "wire/output")
		}
	})
}
