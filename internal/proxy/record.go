package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	acpclient "github.com/acpnorm/acpnorm/client"
	"github.com/acpnorm/acpnorm/fold"
	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
)

// Recorder takes the lines the relay copied, off the relay's path: it
// writes them to the wire recording, normalizes them with a
// NormalizerService and writes the ShellExec record. Every field is
// optional.
type Recorder struct {
	// Client is the service the frames are normalized by (one in this
	// process, or a running acpnormd); nil normalizes nothing.
	Client pb.NormalizerServiceClient
	// Remote, when set, is used instead of Client: each ACP session's
	// frames go through a client.Session, which reconnects, sends again
	// what had no answer and rebuilds a session the server lost.
	// BufferBytes bounds the bytes of frames no acpnormd has answered yet
	// (DefaultBufferBytes when 0); past it, frames are dropped from
	// normalization (counted in Stats.Dropped, said once).
	Remote      *acpclient.Client
	BufferBytes int64
	// Service names Client or Remote in notices ("acpnormd at host:port").
	Service string
	// Session names the first ACP session (later ones get -2, -3, ...);
	// empty uses each ACP session's own id.
	Session string
	// Dialect is a dialect name, or "auto".
	Dialect string
	// Out gets one protojson ShellExec per line: each call's final state
	// when it ends (and again, whole, if it changes after), or every
	// revision with AllRevisions.
	Out          io.Writer
	AllRevisions bool
	// Wire gets every JSON line both ways, in the recording format
	// `acpnormd replay` reads.
	Wire io.Writer
	// Say prints one notice (the proxy's stderr).
	Say func(msg string)

	frames, notJSON, unsent, frameErrors, revisions, written atomic.Int64
	dropped, droppedBytes, reconnects, resent, losses        atomic.Int64
	firstDropped, lastDropped                                atomic.Uint64 // wire lines

	downOnce, frameErrOnce, outOnce, wireOnce, dropOnce, fullOnce sync.Once
}

// Stats is what a Recorder did.
type Stats struct {
	// Frames counts the JSON lines taken (the wire recording's lines).
	Frames int64
	// NotJSON counts lines that were not JSON: relayed, not normalized.
	NotJSON int64
	// Unsent counts frames not normalized because the service was down or
	// the stream to it ended.
	Unsent int64
	// FrameErrors counts the frame errors the service answered.
	FrameErrors int64
	// Revisions counts the ShellExec revisions received; Written the
	// records written to Out.
	Revisions, Written int64
	// With Remote: Dropped counts the frames (DroppedBytes their bytes)
	// not normalized because BufferBytes of frames had no answer yet;
	// Reconnects, Resent and Losses are the sessions' client.Stats
	// summed (streams that broke, requests sent again, DATA_LOSS answers
	// each followed by a rebuild), counted when the sessions end.
	Dropped, DroppedBytes      int64
	Reconnects, Resent, Losses int64
	// DroppedFirstLine and DroppedLastLine are the wire lines of the
	// first and the last frame dropped (0 when none was).
	DroppedFirstLine, DroppedLastLine uint64
}

// Stats returns the counts so far.
func (r *Recorder) Stats() Stats {
	return Stats{
		Frames: r.frames.Load(), NotJSON: r.notJSON.Load(), Unsent: r.unsent.Load(),
		FrameErrors: r.frameErrors.Load(), Revisions: r.revisions.Load(), Written: r.written.Load(),
		Dropped: r.dropped.Load(), DroppedBytes: r.droppedBytes.Load(),
		Reconnects: r.reconnects.Load(), Resent: r.resent.Load(), Losses: r.losses.Load(),
		DroppedFirstLine: r.firstDropped.Load(), DroppedLastLine: r.lastDropped.Load(),
	}
}

func (r *Recorder) say(format string, args ...any) {
	if r.Say != nil {
		r.Say(fmt.Sprintf(format, args...))
	}
}

// yieldLines is how many lines the consumer takes between two yields of
// its processor (runtime.Gosched, about 0.1 µs when nothing else waits).
const yieldLines = 16

// consume runs until the queue is closed and what it sent is answered, or
// ctx ends (the proxy gives it a bounded time after the agent exits).
func (r *Recorder) consume(ctx context.Context, t *tee) {
	var st *normStream
	var rm *remote
	switch {
	case r.Remote != nil:
		rm = r.openRemote()
	case r.Client != nil:
		st = r.open(ctx)
	}
	var wire *bufio.Writer
	if r.Wire != nil {
		wire = bufio.NewWriterSize(r.Wire, 64<<10)
	}
	rt := newRouter(r.Session)
	var seq uint64
	for n := 1; ; n++ {
		l, ok := t.next()
		if !ok {
			break
		}
		if n%yieldLines == 0 {
			// Cutting, scanning and writing lines is work in this
			// goroutine's processor, and the relay's goroutines need one
			// to go on after each wait (there are as many processors as
			// cores, two on a small machine): a backlog of small lines
			// would hold one for up to the scheduler's 10 ms slice.
			runtime.Gosched()
		}
		env, ok := parse(l.Msg)
		if !ok {
			r.notJSON.Add(1)
			continue
		}
		seq++
		r.frames.Add(1)
		f := frame{seq: seq, dir: l.Dir, msg: l.Msg}
		if wire != nil {
			r.writeWire(wire, l)
			if !t.pending() {
				r.flushWire(wire)
			}
		}
		if rm != nil {
			for _, x := range rt.route(f, &env) {
				rm.send(x)
			}
		} else if st != nil {
			// Send marshals the message before it returns (the proxy's
			// connections have no stats handler that would keep it), and
			// the router copies what it holds: the buffer is free after.
			for _, x := range rt.route(f, &env) {
				st.send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{
					SessionId: x.session, Dialect: r.Dialect, Sequence: x.seq, Direction: x.dir, Message: x.msg,
				}}})
			}
		}
	}
	if wire != nil {
		r.flushWire(wire)
	}
	if st == nil && rm == nil {
		return
	}
	if rt.overflow {
		r.say("the agent opened more than %d sessions; the frames of the later ones were normalized as the last one's", maxSessions)
	}
	if rm != nil {
		rm.finish(ctx, seq)
		return
	}
	// As replay does at the end of a recording: each call still open
	// ends, as UNKNOWN unless more is known.
	for _, s := range rt.sessions() {
		st.send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: s, Sequence: seq + 1}}})
	}
	st.finish(ctx)
}

var dirNames = map[pb.Direction]string{
	pb.Direction_DIRECTION_AGENT_TO_CLIENT: "agent->client",
	pb.Direction_DIRECTION_CLIENT_TO_AGENT: "client->agent",
}

func (r *Recorder) writeWire(w *bufio.Writer, l Line) {
	var b [64]byte
	head := append(b[:0], `{"dir":"`...)
	head = append(head, dirNames[l.Dir]...)
	head = append(head, `","t_ms":`...)
	head = strconv.AppendInt(head, l.At.Milliseconds(), 10)
	head = append(head, `,"msg":`...)
	w.Write(head)
	w.Write(l.Msg)
	w.WriteString("}\n")
}

func (r *Recorder) flushWire(w *bufio.Writer) {
	if err := w.Flush(); err != nil {
		r.wireOnce.Do(func() { r.say("writing the wire recording: %v; it stops here (the relay goes on)", err) })
		w.Reset(io.Discard)
	}
}

// normStream is the Normalize stream of one proxy run.
type normStream struct {
	r      *Recorder
	ctx    context.Context
	cancel context.CancelFunc
	s      pb.NormalizerService_NormalizeClient
	down   atomic.Bool
	done   chan struct{} // closed when the receiver stops

	fold fold.Folder
}

func (r *Recorder) open(ctx context.Context) *normStream {
	ctx, cancel := context.WithCancel(ctx)
	st := &normStream{r: r, ctx: ctx, cancel: cancel, done: make(chan struct{})}
	s, err := r.Client.Normalize(ctx)
	if err != nil {
		st.stopped(err)
		close(st.done)
		return st
	}
	st.s = s
	go st.receive()
	return st
}

// stopped marks the stream down and says why, once.
func (st *normStream) stopped(err error) {
	st.down.Store(true)
	r := st.r
	r.downOnce.Do(func() {
		if cause := context.Cause(st.ctx); cause != nil {
			r.say("normalization was cut short: %v; what %s had not answered is not in the record", cause, r.Service)
			return
		}
		msg := err.Error()
		if s, ok := status.FromError(err); ok {
			msg = s.Code().String() + ": " + s.Message()
		}
		r.say("normalization stopped: %s: %s; the relay goes on, later frames are not normalized (counted)", r.Service, msg)
	})
}

func (st *normStream) send(req *pb.NormalizeRequest) {
	if st.down.Load() {
		if req.GetFrame() != nil {
			st.r.unsent.Add(1)
		}
		return
	}
	if err := st.s.Send(req); err != nil {
		if req.GetFrame() != nil {
			st.r.unsent.Add(1)
		}
		st.down.Store(true) // the receiver gets the stream's real status
		if !errors.Is(err, io.EOF) {
			st.stopped(err)
		}
	}
}

func (st *normStream) receive() {
	defer close(st.done)
	for {
		resp, err := st.s.Recv()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				st.stopped(err)
			}
			return
		}
		st.handle(resp)
	}
}

func (st *normStream) handle(resp *pb.NormalizeResponse) {
	r := st.r
	if fe := resp.GetFrameError(); fe != nil {
		r.frameErrors.Add(1)
		r.frameErrOnce.Do(func() {
			r.say("frame error at frame %d: code %d: %s (later frame errors are counted)", fe.GetSequence(), fe.GetCode(), fe.GetMessage())
		})
		return
	}
	x := resp.GetShellExec()
	if x == nil {
		return
	}
	r.revisions.Add(1)
	if r.Out == nil {
		return
	}
	if !r.AllRevisions {
		err := st.fold.Apply(x)
		if x.GetState() != pb.ShellState_SHELL_STATE_ENDED {
			return
		}
		k := fold.KeyOf(x)
		var fe *fold.Error
		if err == nil || (errors.As(err, &fe) && fe.Applied) {
			if last := st.fold.State(k); last != nil {
				x = last
			}
		}
		defer st.fold.Delete(k)
	}
	b, err := protojson.Marshal(x)
	if err == nil {
		_, err = r.Out.Write(append(b, '\n'))
	}
	if err != nil {
		r.outOnce.Do(func() { r.say("writing the record: %v (the relay goes on)", err) })
		return
	}
	r.written.Add(1)
}

// finish closes the sending side and waits for the last answers, or for
// ctx to end.
func (st *normStream) finish(ctx context.Context) {
	if !st.down.Load() {
		if err := st.s.CloseSend(); err != nil {
			st.down.Store(true)
		}
	}
	select {
	case <-st.done:
	case <-ctx.Done():
	}
	st.cancel()
	<-st.done
}
