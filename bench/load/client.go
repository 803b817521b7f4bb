package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Options say what one load run does.
type Options struct {
	// Addr is the server's host:port (loopback).
	Addr string
	// Streams is the number of concurrent Normalize streams, each on its
	// own connection.
	Streams int
	// Duration is how long streams start new frames; each then closes its
	// session and waits for the server to catch up.
	Duration time.Duration
	// Scenario is what every stream replays, in a loop.
	Scenario *Scenario
	// Sessions is how many recordings a stream carries at once, each
	// under its own session id, their frames interleaved one by one
	// (0 or 1: one recording at a time).
	Sessions int
	// ServerPID is read in /proc for CPU time and peak RSS; 0 skips it.
	ServerPID int
	// RunID makes session ids unique across runs against one server.
	RunID string
	// OwnACPIds sends each stream's recordings with ACP session ids of
	// its own (ownACPIds), as concurrent agents' sessions have; without
	// it every stream sends the ids as recorded, so that streams
	// replaying the same recording send the same ids, and share what a
	// server keys by them (its decode memo).
	OwnACPIds bool
	// Wait bounds how long a stream waits for the server to answer the
	// barrier after a replay (default 60 s).
	Wait time.Duration
	// Rate, above 0, paces every stream at that many frames a second:
	// each frame has its turn in a schedule that starts with each replay,
	// and its latency counts from its turn, not from when it was sent, so
	// that a send held back by the server (flow control) counts as the
	// wait an agent's frame would have. 0 sends each frame as soon as the
	// stream takes it, which keeps the server saturated: there a frame's
	// latency is the frames queued before it over the server's rate.
	Rate float64
}

// Result is what one load run measured.
type Result struct {
	Scenario string `json:"scenario"`
	Server   string `json:"server"`
	Streams  int    `json:"streams"`
	Round    int    `json:"round"`
	// Frames are the frames sent and known to be processed (the server
	// answered the barrier that follows them); Replays counts whole
	// recordings among them.
	Frames  int64 `json:"frames"`
	Bytes   int64 `json:"bytes"`
	Replays int64 `json:"replays"`
	// Responses counts every response but the barriers' answers;
	// FrameErrors counts those that are FrameErrors.
	Responses   int64 `json:"responses"`
	FrameErrors int64 `json:"frame_errors"`
	// SendErrors counts failed sends, failed stream opens, streams that
	// ended with an error and barriers never answered.
	SendErrors int64         `json:"send_errors"`
	Elapsed    time.Duration `json:"elapsed_ns"`
	// Rate is Options.Rate: the frames a second each stream was paced
	// at, 0 for none.
	Rate float64 `json:"rate,omitempty"`
	// FramesPerSec and MBPerSec are Frames and Bytes over Elapsed.
	FramesPerSec float64 `json:"frames_per_sec"`
	MBPerSec     float64 `json:"mb_per_sec"`
	// Latencies, in milliseconds, from a frame's send (its turn, when
	// paced) to the first response carrying its sequence (frames
	// without a response have none); Latencies counts them.
	Latencies int     `json:"latencies"`
	P50ms     float64 `json:"p50_ms"`
	P99ms     float64 `json:"p99_ms"`
	// P99SmallMs and P99BigMs are the p99 of the frames under BigFrame
	// bytes and of those at or over it (0: no such frame answered): a
	// stream is applied in order, so a big frame's work shows in its own
	// latency and in that of the small frames queued behind it.
	P99SmallMs float64 `json:"p99_small_ms"`
	P99BigMs   float64 `json:"p99_big_ms"`
	// ServerCores is server CPU time over Elapsed (2.0 = two cores busy);
	// ServerPeakRSS is the server's peak resident set during the run.
	ServerCores   float64 `json:"server_cores"`
	ServerPeakRSS int64   `json:"server_peak_rss"`
	// ServerUsPerFrame is the server's CPU time (user plus system) in
	// microseconds over Frames: what a frame costs the server, a figure a
	// machine loaded by other work disturbs far less than frames/s.
	ServerUsPerFrame float64 `json:"server_us_per_frame"`
	// ClientCores is the load client's own CPU time over Elapsed; it
	// shares the machine with the server.
	ClientCores float64 `json:"client_cores"`
	// Errors holds the first few error messages.
	Errors []string `json:"errors,omitempty"`
}

// Failed says whether the run saw any error.
func (r *Result) Failed() bool { return r.FrameErrors > 0 || r.SendErrors > 0 }

// BigFrame is the message size from which Result counts a frame as big.
const BigFrame = 16 << 10

type tally struct {
	mu sync.Mutex
	// lat holds the latencies of the small frames, then of the big ones.
	lat       [2][]time.Duration
	errors    []string
	frames    atomic.Int64
	bytes     atomic.Int64
	replays   atomic.Int64
	responses atomic.Int64
	frameErrs atomic.Int64
	sendErrs  atomic.Int64
}

func (t *tally) fail(counter *atomic.Int64, format string, args ...any) {
	counter.Add(1)
	t.mu.Lock()
	if len(t.errors) < 5 {
		t.errors = append(t.errors, fmt.Sprintf(format, args...))
	}
	t.mu.Unlock()
}

// Run replays o.Scenario on o.Streams streams for o.Duration and measures.
//
// Each stream sends the frames of one recording under a fresh session id,
// then a SessionClosed for it, then a barrier: a frame without a session
// id, which every server answers (acpnormd with a FrameError, the echo
// server with a ShellExec) after everything sent before it, since a stream
// is processed in order. The barrier's answer is not counted. So at most
// one recording is in flight per stream, and when the time is up the
// frames counted are the frames the server has processed.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Wait == 0 {
		o.Wait = 60 * time.Second
	}
	if o.Rate != 0 && !(o.Rate >= minRate && o.Rate <= maxRate) {
		return nil, fmt.Errorf("a rate of %v frames a second: give 0 (no pacing) or from %v to %v", o.Rate, minRate, maxRate)
	}
	t := &tally{}
	// Each stream's own copy of the replays is made before the clock and
	// the CPU counters start.
	replays := make([][][]Frame, o.Streams)
	for w := range replays {
		replays[w] = o.Scenario.Replays
		if o.OwnACPIds {
			replays[w] = ownACPIds(replays[w], w)
		}
	}
	cpu0, _ := ProcCPU(0)
	var scpu0 time.Duration
	if o.ServerPID > 0 {
		ResetPeakRSS(o.ServerPID)
		scpu0, _ = ProcCPU(o.ServerPID)
	}
	start := time.Now()
	deadline := start.Add(o.Duration)
	var wg sync.WaitGroup
	for w := range o.Streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker(ctx, o, w, replays[w], deadline, t)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	r := &Result{
		Scenario: o.Scenario.Name, Streams: o.Streams,
		Frames: t.frames.Load(), Bytes: t.bytes.Load(), Replays: t.replays.Load(),
		Responses: t.responses.Load(), FrameErrors: t.frameErrs.Load(), SendErrors: t.sendErrs.Load(),
		Elapsed: elapsed, Errors: t.errors, Latencies: len(t.lat[0]) + len(t.lat[1]), Rate: o.Rate,
	}
	sec := elapsed.Seconds()
	r.FramesPerSec = float64(r.Frames) / sec
	r.MBPerSec = float64(r.Bytes) / sec / 1e6
	all := slices.Concat(t.lat[0], t.lat[1])
	r.P50ms, r.P99ms = percentile(all, 0.50), percentile(all, 0.99)
	r.P99SmallMs, r.P99BigMs = percentile(t.lat[0], 0.99), percentile(t.lat[1], 0.99)
	if cpu1, err := ProcCPU(0); err == nil {
		r.ClientCores = (cpu1 - cpu0).Seconds() / sec
	}
	if o.ServerPID > 0 {
		if scpu1, err := ProcCPU(o.ServerPID); err == nil {
			r.ServerCores = (scpu1 - scpu0).Seconds() / sec
			r.ServerUsPerFrame = perFrame(scpu1-scpu0, r.Frames)
		}
		r.ServerPeakRSS, _ = PeakRSS(o.ServerPID)
	}
	return r, nil
}

// percentile returns the p-th percentile of lat in milliseconds, 0 for
// none; it sorts lat.
func percentile(lat []time.Duration, p float64) float64 {
	if len(lat) == 0 {
		return 0
	}
	slices.Sort(lat)
	return float64(lat[int(p*float64(len(lat)-1))]) / 1e6
}

// perFrame is cpu in microseconds over frames (0 without frames).
func perFrame(cpu time.Duration, frames int64) float64 {
	if frames <= 0 {
		return 0
	}
	return float64(cpu.Microseconds()) / float64(frames)
}

// The rates Options.Rate may give: from a frame an hour (a longer
// interval would not fit a time.Duration for long) to a frame a
// nanosecond.
const minRate, maxRate = 1.0 / 3600, 1e9

// sentFrame is when a frame was sent (or its turn came), and its
// sizeClass.
type sentFrame struct {
	at    time.Time
	class int
}

// sizeClass is the index in tally.lat of a frame of n bytes: 0 under
// BigFrame, 1 at or over it.
func sizeClass(n int) int {
	if n >= BigFrame {
		return 1
	}
	return 0
}

// sleepUntil waits for t, or for ctx to end (false).
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func worker(ctx context.Context, o Options, w int, replays [][]Frame, deadline time.Time, t *tally) {
	conn, err := grpc.NewClient(o.Addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		t.fail(&t.sendErrs, "stream %d: %v", w, err)
		return
	}
	defer conn.Close()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := pb.NewNormalizerServiceClient(conn).Normalize(sctx)
	if err != nil {
		t.fail(&t.sendErrs, "stream %d: open: %v", w, err)
		return
	}

	var (
		mu      sync.Mutex
		sent    = map[uint64]sentFrame{}
		lat     [2][]time.Duration
		barrier atomic.Uint64
		acked   = make(chan struct{}, 1)
		done    = make(chan struct{})
	)
	go func() {
		defer close(done)
		for {
			resp, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				if sctx.Err() == nil {
					t.fail(&t.sendErrs, "stream %d: receive: %v", w, err)
				}
				return
			}
			now := time.Now()
			var seq uint64
			fe := resp.GetFrameError()
			if fe != nil {
				seq = fe.GetSequence()
			} else {
				seq = resp.GetShellExec().GetSequence()
			}
			if seq == barrier.Load() {
				select {
				case acked <- struct{}{}:
				default:
				}
				continue
			}
			t.responses.Add(1)
			if fe != nil {
				t.fail(&t.frameErrs, "stream %d: FrameError on sequence %d (session %s): %s", w, seq, fe.GetSessionId(), fe.GetMessage())
			}
			mu.Lock()
			if f, ok := sent[seq]; ok {
				lat[f.class] = append(lat[f.class], now.Sub(f.at))
				delete(sent, seq)
			}
			mu.Unlock()
		}
	}()

	var seq uint64
	send := func(req *pb.NormalizeRequest) bool {
		if err := stream.Send(req); err != nil {
			t.fail(&t.sendErrs, "stream %d: send: %v", w, err)
			return false
		}
		return true
	}
	var interval time.Duration
	if o.Rate > 0 {
		interval = time.Duration(float64(time.Second) / o.Rate)
	}
	k := max(o.Sessions, 1)
	ok := true
	for n := 0; ok && time.Now().Before(deadline) && ctx.Err() == nil; n++ {
		turn := time.Now()
		recs := make([][]Frame, k)
		sids := make([]string, k)
		longest := 0
		for j := range k {
			recs[j] = replays[(w+n*k+j)%len(replays)]
			sids[j] = fmt.Sprintf("%s-s%d-r%d", o.RunID, w, n)
			if k > 1 {
				sids[j] += fmt.Sprintf("-%d", j)
			}
			longest = max(longest, len(recs[j]))
		}
		var frames, bytes int64
		whole := true
	interleave:
		for i := range longest {
			for j, rec := range recs {
				if i >= len(rec) {
					continue
				}
				if !time.Now().Before(deadline) {
					whole = false
					break interleave
				}
				f := rec[i]
				var at time.Time
				if interval > 0 {
					turn = turn.Add(interval)
					if !sleepUntil(ctx, turn) {
						whole = false
						break interleave
					}
					at = turn
				} else {
					at = time.Now()
				}
				seq++
				mu.Lock()
				sent[seq] = sentFrame{at: at, class: sizeClass(len(f.Msg))}
				mu.Unlock()
				if ok = send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{
					SessionId: sids[j], Dialect: "auto", Sequence: seq, Direction: f.Dir, Message: f.Msg,
				}}}); !ok {
					break interleave
				}
				frames++
				bytes += int64(len(f.Msg))
			}
		}
		for _, sid := range sids {
			if !ok {
				break
			}
			seq++
			ok = send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: sid, Sequence: seq}}})
		}
		if !ok {
			break
		}
		seq++
		barrier.Store(seq)
		if ok = send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{Sequence: seq, Message: []byte("{}")}}}); !ok {
			break
		}
		select {
		case <-acked:
		case <-done:
			ok = false
		case <-time.After(o.Wait):
			t.fail(&t.sendErrs, "stream %d: no answer to the barrier within %v", w, o.Wait)
			ok = false
		}
		if !ok {
			break
		}
		t.frames.Add(frames)
		t.bytes.Add(bytes)
		if whole {
			t.replays.Add(int64(k))
		}
		mu.Lock()
		clear(sent)
		mu.Unlock()
	}
	if err := stream.CloseSend(); err != nil {
		t.fail(&t.sendErrs, "stream %d: close: %v", w, err)
	}
	select {
	case <-done:
	case <-time.After(o.Wait):
		t.fail(&t.sendErrs, "stream %d: the server did not end the stream within %v", w, o.Wait)
	}
	t.mu.Lock()
	for i := range lat {
		t.lat[i] = append(t.lat[i], lat[i]...)
	}
	t.mu.Unlock()
}
