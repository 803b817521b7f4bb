package load

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// MemoryOptions say what one open-calls memory run does: Sessions sessions
// spread over Streams streams open Calls calls in all, each with
// OutputBytes of live output and none ended; then every session is closed.
type MemoryOptions struct {
	Addr string
	// MetricsURL is the server's /metrics, read for its own count of open
	// calls and held text ("" skips it).
	MetricsURL  string
	ServerPID   int
	Calls       int
	Sessions    int
	Streams     int
	OutputBytes int
	// Settle is how long RSS is sampled after the closes were applied.
	Settle time.Duration
	// Every is the sampling interval after the closes (default 500 ms).
	Every time.Duration
	RunID string
	// Wait bounds each wait for the server (default 120 s).
	Wait time.Duration
}

// RSSSample is the server's resident set some time after the closes.
type RSSSample struct {
	After time.Duration `json:"after_ns"`
	RSS   int64         `json:"rss"`
}

// MemoryResult is what a memory run saw.
type MemoryResult struct {
	RSSBefore int64 `json:"rss_before"`
	// RSSOpen is the resident set with every call open; PeakOpen the peak
	// while they were being opened.
	RSSOpen  int64 `json:"rss_open"`
	PeakOpen int64 `json:"peak_open"`
	// Metrics the server reported with every call open, and after the
	// closes (-1: not read).
	OpenCalls, HeldBytes, OpenCallsAfter float64
	OpenTime                             time.Duration `json:"open_ns"`
	Closed                               []RSSSample   `json:"after_close"`
	FrameErrors, SendErrors              int64
	Errors                               []string `json:"errors,omitempty"`
}

// Failed says whether the run saw any error.
func (r *MemoryResult) Failed() bool { return r.FrameErrors > 0 || r.SendErrors > 0 }

// OpenCallFrames returns the frames of one Grok-like session that opens
// calls commands and sends, for each, one live snapshot of outputBytes of
// output, ending none of them. Outputs differ between calls.
func OpenCallFrames(calls, outputBytes int) []Frame {
	var fs []Frame
	a2c, c2a := pb.Direction_DIRECTION_AGENT_TO_CLIENT, pb.Direction_DIRECTION_CLIENT_TO_AGENT
	add := func(dir pb.Direction, msg string) { fs = append(fs, Frame{Dir: dir, Msg: []byte(msg)}) }
	add(c2a, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"terminal":false}}}`)
	add(a2c, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"grok","version":"bench"},"agentCapabilities":{}}}`)
	add(c2a, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/work/project","mcpServers":[]}}`)
	add(a2c, `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"g1"}}`)
	add(c2a, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"g1","prompt":[{"type":"text","text":"run them"}]}}`)
	const meta = `"_meta":{"x.ai/tool":{"name":"run_terminal_command","kind":"execute"}}`
	base := grokOutput(outputBytes + 16)
	for i := range calls {
		id := fmt.Sprintf("call_%d", i)
		update := func(u string) {
			add(a2c, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"g1","update":`+u+`}}`)
		}
		update(`{"sessionUpdate":"tool_call","toolCallId":"` + id + `","title":"run_terminal_command","rawInput":{"command":"make -C pkg` + strconv.Itoa(i) + `"},` + meta + `}`)
		out := []byte(fmt.Sprintf("%08d ", i))
		out = append(out, base[:outputBytes-len(out)]...)
		update(`{"sessionUpdate":"tool_call_update","toolCallId":"` + id + `","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":` +
			jstr(string(out)) + `}}],"rawOutput":{"total_bytes":` + strconv.Itoa(len(out)) + `}}`)
	}
	return fs
}

// memStream is one stream of a memory run: its sessions, and a receiver
// that counts FrameErrors and acknowledges barriers.
type memStream struct {
	stream  pb.NormalizerService_NormalizeClient
	seq     uint64
	barrier atomic.Uint64
	acked   chan struct{}
	done    chan struct{}
}

// Memory opens o.Calls calls on the server, samples its RSS, closes every
// session and samples RSS for o.Settle after.
func Memory(ctx context.Context, o MemoryOptions) (*MemoryResult, error) {
	if o.Wait == 0 {
		o.Wait = 120 * time.Second
	}
	if o.Every == 0 {
		o.Every = 500 * time.Millisecond
	}
	if o.Sessions < 1 || o.Streams < 1 || o.Calls < o.Sessions || o.Calls%o.Sessions != 0 || o.OutputBytes < 16 {
		return nil, fmt.Errorf("memory: need calls a multiple of sessions, at least one stream, output of at least 16 bytes")
	}
	perSession := o.Calls / o.Sessions
	frames := OpenCallFrames(perSession, o.OutputBytes)
	t := &tally{}
	r := &MemoryResult{OpenCalls: -1, HeldBytes: -1, OpenCallsAfter: -1}
	r.RSSBefore, _ = RSS(o.ServerPID)
	ResetPeakRSS(o.ServerPID)

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	streams := make([]*memStream, o.Streams)
	for i := range streams {
		conn, err := grpc.NewClient(o.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		st, err := pb.NewNormalizerServiceClient(conn).Normalize(sctx)
		if err != nil {
			return nil, fmt.Errorf("stream %d: open: %w", i, err)
		}
		ms := &memStream{stream: st, acked: make(chan struct{}, 1), done: make(chan struct{})}
		streams[i] = ms
		go func() {
			defer close(ms.done)
			for {
				resp, err := st.Recv()
				if errors.Is(err, io.EOF) {
					return
				}
				if err != nil {
					if sctx.Err() == nil {
						t.fail(&t.sendErrs, "stream %d: receive: %v", i, err)
					}
					return
				}
				fe := resp.GetFrameError()
				if fe != nil && fe.GetSequence() == ms.barrier.Load() {
					select {
					case ms.acked <- struct{}{}:
					default:
					}
					continue
				}
				if fe != nil {
					t.fail(&t.frameErrs, "stream %d: FrameError on sequence %d (session %s): %s", i, fe.GetSequence(), fe.GetSessionId(), fe.GetMessage())
				}
			}
		}()
	}
	sid := func(s int) string { return fmt.Sprintf("%s-m%d", o.RunID, s) }
	// phase has every stream send what send gives it, then a barrier, and
	// waits until every stream's barrier was answered.
	phase := func(send func(ms *memStream, w int) error) error {
		var wg sync.WaitGroup
		for w, ms := range streams {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := send(ms, w); err != nil {
					t.fail(&t.sendErrs, "stream %d: send: %v", w, err)
					return
				}
				ms.seq++
				ms.barrier.Store(ms.seq)
				if err := ms.stream.Send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{Sequence: ms.seq, Message: []byte("{}")}}}); err != nil {
					t.fail(&t.sendErrs, "stream %d: send: %v", w, err)
					return
				}
				select {
				case <-ms.acked:
				case <-ms.done:
					t.fail(&t.sendErrs, "stream %d: ended before the barrier", w)
				case <-time.After(o.Wait):
					t.fail(&t.sendErrs, "stream %d: no answer to the barrier within %v", w, o.Wait)
				}
			}()
		}
		wg.Wait()
		if t.sendErrs.Load() > 0 {
			return fmt.Errorf("memory: %s", strings.Join(t.errors, "; "))
		}
		return ctx.Err()
	}

	start := time.Now()
	err := phase(func(ms *memStream, w int) error {
		for s := w; s < o.Sessions; s += len(streams) {
			for _, f := range frames {
				ms.seq++
				if err := ms.stream.Send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{
					SessionId: sid(s), Dialect: "auto", Sequence: ms.seq, Direction: f.Dir, Message: f.Msg,
				}}}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	r.OpenTime = time.Since(start)
	if err != nil {
		return nil, err
	}
	r.RSSOpen, _ = RSS(o.ServerPID)
	r.PeakOpen, _ = PeakRSS(o.ServerPID)
	if o.MetricsURL != "" {
		m, err := scrape(ctx, o.MetricsURL)
		if err != nil {
			return nil, err
		}
		r.OpenCalls, r.HeldBytes = m["acpnorm_open_calls"], m["acpnorm_held_text_bytes"]
	}

	if err := phase(func(ms *memStream, w int) error {
		for s := w; s < o.Sessions; s += len(streams) {
			ms.seq++
			if err := ms.stream.Send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: sid(s), Sequence: ms.seq}}}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	closed := time.Now()
	for {
		rss, _ := RSS(o.ServerPID)
		r.Closed = append(r.Closed, RSSSample{After: time.Since(closed), RSS: rss})
		if time.Since(closed)+o.Every > o.Settle {
			break
		}
		select {
		case <-time.After(o.Every):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if o.MetricsURL != "" {
		if m, err := scrape(ctx, o.MetricsURL); err == nil {
			r.OpenCallsAfter = m["acpnorm_open_calls"]
		}
	}
	for w, ms := range streams {
		if err := ms.stream.CloseSend(); err != nil {
			t.fail(&t.sendErrs, "stream %d: close: %v", w, err)
		}
		select {
		case <-ms.done:
		case <-time.After(o.Wait):
			t.fail(&t.sendErrs, "stream %d: the server did not end the stream within %v", w, o.Wait)
		}
	}
	r.FrameErrors, r.SendErrors, r.Errors = t.frameErrs.Load(), t.sendErrs.Load(), t.errors
	return r, nil
}

// scrape reads the unlabelled samples of a Prometheus text exposition.
func scrape(ctx context.Context, url string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 || strings.HasPrefix(f[0], "#") || strings.Contains(f[0], "{") {
			continue
		}
		if v, err := strconv.ParseFloat(f[1], 64); err == nil {
			m[f[0]] = v
		}
	}
	return m, sc.Err()
}
