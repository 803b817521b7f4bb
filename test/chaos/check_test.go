package chaos

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/client"
	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/replay"
	"github.com/acpnorm/acpnorm/internal/service"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// wire watches every response of every stream the clients open, apart
// from what the client does with it: it is how the checker tells that a
// loss happened without taking the server's word for it. A revision
// number that comes again with other content, or a lower revision made
// by a later frame than the call's highest, is a call going back: the
// server restarted it from state the store lost.
type wire struct {
	mu        sync.Mutex
	calls     map[[2]string]*seenCall
	dataLoss  map[string]int // DATA_LOSS answers per session
	frames    int            // ShellExec responses seen
	goingBack []string       // what went back, for the failure message
	// trace is, per session, what its client's streams did (the address,
	// the first sequence sent and what it claimed to hold, the errors
	// answered, how each stream ended), for a failure message.
	trace map[string][]string
	// firstSent counts, per session, the requests sent as sequence 1.
	firstSent map[string]int
}

// maxTrace bounds the lines of a session's trace (the last are kept).
const maxTrace = 200

func (w *wire) log(session, format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := append(w.trace[session], time.Now().Format("15:04:05.000")+" "+fmt.Sprintf(format, args...))
	if len(l) > maxTrace {
		l = l[len(l)-maxTrace:]
	}
	w.trace[session] = l
}

// traceOf is a session's trace, one line per event.
func (w *wire) traceOf(session string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.trace[session], "\n")
}

type seenCall struct {
	revs     map[uint32]seenRev
	max      uint32
	seqAtMax uint64
}

type seenRev struct {
	seq  uint64
	hash [32]byte
}

func newWire() *wire {
	return &wire{calls: map[[2]string]*seenCall{}, dataLoss: map[string]int{}, trace: map[string][]string{}, firstSent: map[string]int{}}
}

// dialOption adds the watch to a client's connections.
func (w *wire) dialOption() grpc.DialOption {
	return grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		cs, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			return nil, err
		}
		return &watched{ClientStream: cs, w: w, target: cc.Target()}, nil
	})
}

type watched struct {
	grpc.ClientStream
	w       *wire
	target  string
	mu      sync.Mutex
	session string
	first   uint64 // the first and last sequences sent
	last    uint64
	ended   bool
}

func (s *watched) SendMsg(m any) error {
	if r, ok := m.(*pb.NormalizeRequest); ok {
		var id string
		var seq uint64
		claim := ""
		switch {
		case r.GetFrame() != nil:
			f := r.GetFrame()
			id, seq = f.GetSessionId(), f.GetSequence()
			if len(f.GetHeldRevisions()) > 0 || f.GetHeldSequence() > 0 {
				claim = fmt.Sprintf(" held_sequence %d, held_revisions of %d calls", f.GetHeldSequence(), len(f.GetHeldRevisions()))
			}
		case r.GetSessionClosed() != nil:
			id, seq = r.GetSessionClosed().GetSessionId(), r.GetSessionClosed().GetSequence()
			claim = " (SessionClosed)"
		case r.GetTurnEnded() != nil:
			id, seq = r.GetTurnEnded().GetSessionId(), r.GetTurnEnded().GetSequence()
		}
		if id != "" {
			s.mu.Lock()
			first := s.session == ""
			if first {
				s.session, s.first = id, seq
			}
			s.last = seq
			s.mu.Unlock()
			if seq == 1 {
				s.w.mu.Lock()
				s.w.firstSent[id]++
				s.w.mu.Unlock()
			}
			if first || claim != "" {
				s.w.log(id, "stream to %s: sends %d%s", s.target, seq, claim)
			}
		}
	}
	return s.ClientStream.SendMsg(m)
}

func (s *watched) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if r, ok := m.(*pb.NormalizeResponse); ok && err == nil {
		s.w.see(r)
		if fe := r.GetFrameError(); fe != nil {
			msg := fe.GetMessage()
			if len(msg) > 300 {
				msg = msg[:300] + "…"
			}
			s.w.log(fe.GetSessionId(), "stream to %s: FrameError %v at %d: %s", s.target, codes.Code(fe.GetCode()), fe.GetSequence(), msg)
		}
	}
	if err != nil {
		s.mu.Lock()
		id, first, last, ended := s.session, s.first, s.last, s.ended
		s.ended = true
		s.mu.Unlock()
		if id != "" && !ended {
			s.w.log(id, "stream to %s ends (sent %d to %d): %v; trailer %v", s.target, first, last, err, s.ClientStream.Trailer())
		}
	}
	return err
}

func (w *wire) see(r *pb.NormalizeResponse) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if fe := r.GetFrameError(); fe != nil && codes.Code(fe.GetCode()) == codes.DataLoss {
		w.dataLoss[fe.GetSessionId()]++
		return
	}
	x := r.GetShellExec()
	if x == nil {
		return
	}
	w.frames++
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(x)
	got := seenRev{seq: x.GetSequence(), hash: sha256.Sum256(b)}
	k := [2]string{x.GetSessionId(), x.GetToolCallId()}
	c := w.calls[k]
	if c == nil {
		c = &seenCall{revs: map[uint32]seenRev{}}
		w.calls[k] = c
	}
	rev := x.GetRevision()
	if prev, ok := c.revs[rev]; ok {
		if prev != got {
			w.goingBack = append(w.goingBack, fmt.Sprintf("session %s call %s: revision %d came again with other content (sequence %d, before %d)", k[0], k[1], rev, got.seq, prev.seq))
		}
		return
	}
	if rev < c.max && got.seq > c.seqAtMax {
		w.goingBack = append(w.goingBack, fmt.Sprintf("session %s call %s: revision %d (sequence %d) after revision %d (sequence %d)", k[0], k[1], rev, got.seq, c.max, c.seqAtMax))
	}
	c.revs[rev] = got
	if rev > c.max {
		c.max, c.seqAtMax = rev, got.seq
	}
}

// history lists what the wire saw of a session: each call's revisions
// with the sequence that made them, and the DATA_LOSS answers.
func (w *wire) history(session string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "DATA_LOSS %d", w.dataLoss[session])
	for k, c := range w.calls {
		if k[0] != session {
			continue
		}
		var revs []uint32
		for r := range c.revs {
			revs = append(revs, r)
		}
		sort.Slice(revs, func(i, j int) bool { return revs[i] < revs[j] })
		fmt.Fprintf(&b, "; call %s:", k[1])
		for _, r := range revs {
			fmt.Fprintf(&b, " %d@%d", r, c.revs[r].seq)
		}
	}
	return b.String()
}

// monotonic records revisions the client hands on that go back.
type monotonic struct {
	mu   sync.Mutex
	last map[string]uint32
	back []string
}

func (m *monotonic) on(x *pb.ShellExec) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last == nil {
		m.last = map[string]uint32{}
	}
	if prev := m.last[x.GetToolCallId()]; x.GetRevision() <= prev {
		m.back = append(m.back, fmt.Sprintf("call %s: revision %d handed on after %d", x.GetToolCallId(), x.GetRevision(), prev))
	}
	m.last[x.GetToolCallId()] = x.GetRevision()
}

// reference is one process's result of a recording: the finals and
// FrameErrors of a plain replay on an in-process service.
type reference struct {
	finals []*pb.ShellExec
	errs   []*pb.FrameError
}

type references struct {
	mu   sync.Mutex
	refs map[string]*reference
}

func (r *references) get(file string, lines []replay.Line) (*reference, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ref := r.refs[file]; ref != nil {
		return ref, nil
	}
	svc, err := service.New(service.DefaultConfig(), nil, nil)
	if err != nil {
		return nil, err
	}
	lis := bufconn.Listen(1 << 20)
	srv := service.NewServer(svc, service.DefaultServerOptions(), nil)
	go srv.Serve(lis)
	defer srv.GRPC.Stop()
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resps, err := replay.Play(ctx, pb.NewNormalizerServiceClient(conn), lines, replay.Options{SessionID: "reference", Dialect: "auto"})
	if err != nil {
		return nil, fmt.Errorf("reference run of %s: %w", file, err)
	}
	calls, errs := replay.Fold(resps)
	ref := &reference{errs: errs}
	for _, c := range calls {
		ref.finals = append(ref.finals, c.Last)
	}
	if r.refs == nil {
		r.refs = map[string]*reference{}
	}
	r.refs[file] = ref
	return ref, nil
}

// comparable is a final without what may differ between two runs of the
// same frames: the session id, the sequence (the client numbers requests
// 1, 2, 3, a plain replay by line) and the revision (a call rebuilt after
// a loss goes on above what the client held).
func comparable(x *pb.ShellExec) string {
	c := proto.Clone(x).(*pb.ShellExec)
	c.SessionId, c.Sequence, c.Revision = "", 0, 0
	return protojson.Format(c)
}

// short is a final for a failure message: its texts cut to their ends.
func short(x *pb.ShellExec) string {
	c := proto.Clone(x).(*pb.ShellExec)
	for _, txt := range []*pb.ShellText{c.GetOutput(), c.GetStdout(), c.GetStderr()} {
		if t := txt.GetText(); len(t) > 200 {
			txt.Text = fmt.Sprintf("%s…[%d bytes]…%s", t[:80], len(t)-160, t[len(t)-80:])
		}
	}
	return protojson.Format(c)
}

func comparableErr(fe *pb.FrameError) string {
	return fmt.Sprintf("code %d call %q: %s", fe.GetCode(), fe.GetToolCallId(), fe.GetMessage())
}

// differs says how a session's finals and FrameErrors differ from the
// reference's, or "".
func differs(ref *reference, got []*pb.ShellExec, errs []*pb.FrameError) string {
	if len(got) != len(ref.finals) {
		return fmt.Sprintf("%d calls, one process has %d", len(got), len(ref.finals))
	}
	want := map[string]*pb.ShellExec{}
	for _, x := range ref.finals {
		want[x.GetToolCallId()] = x
	}
	for _, x := range got {
		w := want[x.GetToolCallId()]
		if w == nil {
			return fmt.Sprintf("call %s: one process has no such call", x.GetToolCallId())
		}
		if comparable(w) != comparable(x) {
			return fmt.Sprintf("call %s: final (revision %d, sequence %d)\n%s\none process's (revision %d):\n%s", x.GetToolCallId(), x.GetRevision(), x.GetSequence(), short(x), w.GetRevision(), short(w))
		}
	}
	var we, ge []string
	for _, fe := range ref.errs {
		we = append(we, comparableErr(fe))
	}
	for _, fe := range errs {
		ge = append(ge, comparableErr(fe))
	}
	sort.Strings(we)
	sort.Strings(ge)
	if fmt.Sprint(we) != fmt.Sprint(ge) {
		return fmt.Sprintf("frame errors %q, one process's %q", ge, we)
	}
	return ""
}

// sessionResult is what one replayed session ended with.
type sessionResult struct {
	id, file string
	frames   int
	stats    client.Stats
	closeErr error
	diff     string // how the finals differ from one process's
	// acrossClose is set when only FrameErrors differ, each a late frame
	// about a call released by the session's close, in a session whose
	// client sent requests again: see withoutAfterClose.
	acrossClose string
	lossTrace   string   // the streams of a session answered DATA_LOSS
	back        []string // revisions handed on that went back
}

// playSession replays lines as session id through a Session of a client
// of addrs, waiting about pace between lines, and closes it.
func playSession(ctx context.Context, w *wire, addrs []string, id, file string, lines []replay.Line, pace time.Duration, ref *reference) sessionResult {
	res := sessionResult{id: id, file: file}
	c, err := client.New(addrs, client.WithBackoff(20*time.Millisecond, time.Second), client.WithDialOptions(w.dialOption()))
	if err != nil {
		res.closeErr = err
		return res
	}
	defer c.Close()
	mono := &monotonic{}
	s := c.Session(id, client.OnRevision(mono.on))
	for _, l := range lines {
		if err := s.Send(ctx, l.Dir, l.Msg); err != nil {
			res.closeErr = fmt.Errorf("send: %w", err)
			return res
		}
		res.frames++
		time.Sleep(pace)
	}
	res.closeErr = s.Close(ctx)
	res.stats = s.Stats()
	res.back = mono.back
	if res.stats.Losses > 0 {
		res.lossTrace = w.traceOf(id)
	}
	if res.closeErr == nil {
		if res.diff = differs(ref, s.Calls(), s.FrameErrors()); res.diff != "" {
			res.diff += fmt.Sprintf("\nclient: %+v; frame errors passed on: %v\non the wire: %s\nits streams:\n%s", res.stats, s.FrameErrors(), w.history(id), w.traceOf(id))
			if res.stats.Resent > 0 && w.resentFirst(id) && differs(ref, s.Calls(), withoutAfterClose(s.FrameErrors())) == "" {
				res.acrossClose, res.diff = res.diff, ""
			}
		}
	}
	return res
}

// resentFirst reports whether a session's client sent sequence 1 more
// than once.
func (w *wire) resentFirst(session string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.firstSent[session] > 1
}

// withoutAfterClose drops the FrameErrors about calls released by the
// session's close (late frames). A client whose stream broke after it
// sent the session's last frames and SessionClosed sends again those it
// had no answer to. The server answers those as applied (ALREADY_EXISTS,
// which the client handles) up to the highest sequence the closed session
// had applied, but for sequence 1, which starts the session again
// (docs/contract.md): a client that had no answer even to its first
// request starts it afresh, and its frames sent again about the closed
// session's calls are answered FAILED_PRECONDITION, as late frames are.
// Nothing was lost (every final equals one process's): the checker
// counts these sessions apart, and only these (sequence 1 sent again);
// any other session whose frame errors differ is a failure.
func withoutAfterClose(errs []*pb.FrameError) []*pb.FrameError {
	var out []*pb.FrameError
	for _, fe := range errs {
		if codes.Code(fe.GetCode()) == codes.FailedPrecondition && strings.Contains(fe.GetMessage(), "was released when its session was closed") {
			continue
		}
		out = append(out, fe)
	}
	return out
}

// report fails t with the seed when any check failed, and logs the figures.
type figures struct {
	faults                  map[string]int
	sessions, frames        int
	revisions               int
	lossesDetected          int // DATA_LOSS answers, each followed by a rebuild
	sessionsRebuilt         int
	lossyFailovers          int // master kills with writes no replica had (by replication offset)
	lossesNotDetected       int
	acrossClose             int // sessions with late-frame errors only, after a resend across their close
	reconnects, resent, una int
}

func (f figures) String() string {
	var kinds []string
	total := 0
	for k, n := range f.faults {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
		total += n
	}
	sort.Strings(kinds)
	return fmt.Sprintf("faults %d %v; sessions %d; frames %d; revisions on the wire %d; losses detected (DATA_LOSS, rebuilt) %d in %d sessions; failovers that lost writes (by replication offset) %d; losses not detected %d; sessions with only late-frame errors after a resend across their close %d; reconnects %d, requests resent %d, refused as not applied %d",
		total, kinds, f.sessions, f.frames, f.revisions, f.lossesDetected, f.sessionsRebuilt, f.lossyFailovers, f.lossesNotDetected, f.acrossClose, f.reconnects, f.resent, f.una)
}

func check(t *testing.T, seed uint64, w *wire, results []sessionResult, f *figures) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("seed %d (repeat: ACPNORM_CHAOS_SEED=%d): %s", seed, seed, fmt.Sprintf(format, args...))
	}
	for _, r := range results {
		f.sessions++
		f.frames += r.frames
		f.reconnects += r.stats.Reconnects
		f.resent += r.stats.Resent
		f.una += r.stats.NotApplied
		if r.closeErr != nil {
			fail("session %s (%s) did not end: %v", r.id, r.file, r.closeErr)
			continue
		}
		if r.lossTrace != "" {
			t.Logf("session %s (%s): %d losses detected; its streams:\n%s", r.id, r.file, r.stats.Losses, r.lossTrace)
		}
		if r.acrossClose != "" {
			f.acrossClose++
			t.Logf("session %s (%s): finals equal one process's, but a resend across its close gave late-frame errors (not a loss): %s", r.id, r.file, r.acrossClose)
		}
		if r.diff != "" {
			f.lossesNotDetected++
			fail("session %s (%s): finals differ from one process's (losses detected in it: %d): %s", r.id, r.file, r.stats.Losses, r.diff)
		}
		for _, b := range r.back {
			fail("session %s: %s", r.id, b)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	f.revisions = w.frames
	for _, n := range w.dataLoss {
		f.lossesDetected += n
		f.sessionsRebuilt++
	}
	f.lossesNotDetected += len(w.goingBack)
	for _, b := range w.goingBack {
		fail("a call went back on the wire (a loss not detected): %s", b)
	}
}
