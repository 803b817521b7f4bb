package service

import (
	"context"
	"fmt"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/normalize"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
)

// perFrameOptions is how a stream applied a request before the feeder:
// the stream loop made a new emit closure for each request, and
// handleRead built every option (context, emit, whole, next dialect) again
// for each one. It is the baseline of BenchmarkFeeder.
func perFrameOptions(ss *sessions, ctx context.Context, req *pb.NormalizeRequest, d *delivered, out func(*pb.NormalizeResponse) error) (string, error) {
	queueFailed := false
	emit := func(r *pb.NormalizeResponse) error {
		if err := out(r); err != nil {
			queueFailed = true
			return err
		}
		return nil
	}
	_ = queueFailed
	ss.m.framesIn.Inc()
	var next string
	opts := []normalize.FeedOption{
		normalize.WithContext(ctx),
		normalize.WithEmit(func(ev normalize.Event) error {
			if ev.Error != nil {
				ss.m.frameError(codes.Code(ev.Error.Code))
				return emit(frameErrorResponse(ev.Error))
			}
			ss.m.execsOut.Inc()
			return emit(&pb.NormalizeResponse{Kind: &pb.NormalizeResponse_ShellExec{ShellExec: shellExec(ev.ShellExec)}})
		}),
	}
	if d != nil {
		opts = append(opts, normalize.WithWhole(d.needsWhole))
		if d.wantsFinalChanges() {
			opts = append(opts, normalize.WithFinalChanges())
		}
	}
	var err error
	switch k := req.GetKind().(type) {
	case *pb.NormalizeRequest_Frame:
		f := k.Frame
		_, err = ss.n.Feed(f.GetSessionId(), f.GetMessage(), append(opts,
			normalize.WithSequence(f.GetSequence()), normalize.WithDialect(f.GetDialect()), normalize.WithCwd(f.GetCwd()),
			normalize.WithPrepared(nil), normalize.WithNextDialect(func(name string) { next = name }))...)
	case *pb.NormalizeRequest_SessionClosed:
		c := k.SessionClosed
		_, err = ss.n.CloseSession(c.GetSessionId(), append(opts, normalize.WithSequence(c.GetSequence()))...)
	default:
		err = fmt.Errorf("unexpected request %T", k)
	}
	return next, err
}

// BenchmarkFeeder measures what building the options of each request
// costs a stream: every frame of a recording, on a fresh session per op,
// then SessionClosed, applied as a stream applies them (with a delivered
// record and final changes), once with the options rebuilt per request
// (the baseline, as before the feeder) and once through a feeder, timed
// apart within each op (in alternating order) so that the ratio comes
// from one run. It reports
// ns and allocations per request of each and feeder/per-frame.
func BenchmarkFeeder(b *testing.B) {
	names, all := pathClasses(b)
	for i, name := range names {
		if name != "codex-acp-0.16.0_shell-command_terminal-meta" && name != "opencode-1.18.33_plain" {
			continue
		}
		b.Run(name, func(b *testing.B) {
			reqs := make([]*pb.NormalizeRequest, len(all[i]))
			for j, f := range all[i] {
				reqs[j] = &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{
					Dialect: "auto", Sequence: uint64(j + 1), Direction: f.Dir, Message: f.Msg,
				}}}
			}
			ctx := context.Background()
			ss := newSessions(DefaultConfig(), NewMetrics(nil), nil)
			out := func(*pb.NormalizeResponse) error { return nil }
			d := newDelivered()
			d.setOptions(&pb.StreamOptions{FinalTexts: pb.FinalTexts_FINAL_TEXTS_CHANGES})
			feed := ss.newFeeder(ctx, d, out)
			n := 0
			// play applies one recording on a fresh session.
			play := func(apply func(*pb.NormalizeRequest) error) (time.Duration, float64) {
				n++
				sid := fmt.Sprintf("bench-%d", n)
				closed := &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: sid}}}
				start := time.Now()
				for _, r := range reqs {
					r.GetFrame().SessionId = sid
					require.NoError(b, apply(r))
				}
				require.NoError(b, apply(closed))
				return time.Since(start), float64(len(reqs) + 1)
			}
			before := func(r *pb.NormalizeRequest) error { _, err := perFrameOptions(ss, ctx, r, d, out); return err }
			after := func(r *pb.NormalizeRequest) error { _, err := feed.handle(r, nil); return err }
			var tBefore, tAfter time.Duration
			var count float64
			for b.Loop() {
				// Alternate which goes first, so that neither always
				// runs on a heap the other just grew.
				if n%4 == 0 {
					t, c := play(before)
					tBefore += t
					count += c
					t, _ = play(after)
					tAfter += t
				} else {
					t, c := play(after)
					tAfter += t
					count += c
					t, _ = play(before)
					tBefore += t
				}
			}
			b.ReportMetric(float64(tBefore.Nanoseconds())/count, "per-frame-ns")
			b.ReportMetric(float64(tAfter.Nanoseconds())/count, "feeder-ns")
			b.ReportMetric(float64(tAfter)/float64(tBefore), "feeder/per-frame")
			per := float64(len(reqs) + 1)
			b.ReportMetric(testing.AllocsPerRun(5, func() { play(before) })/per, "per-frame-allocs")
			b.ReportMetric(testing.AllocsPerRun(5, func() { play(after) })/per, "feeder-allocs")
		})
	}
}
