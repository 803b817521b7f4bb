package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/acpnorm/acpnorm/client"
	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/proxy"
	"github.com/acpnorm/acpnorm/internal/service"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
)

// What the proxy keeps of each open ACP session to rebuild it on a remote
// acpnormd that lost it: its frames (answered or not), up to these bounds.
const (
	remoteSessionFrames = 1 << 20
	remoteSessionBytes  = 256 << 20
	// The wait before reconnecting: from min, doubling, to max.
	remoteMinWait = 50 * time.Millisecond
	remoteMaxWait = 2 * time.Second
)

type proxyFlags struct {
	out, revisions, wire  string
	addr, session, dialct string
	maxFrame              int
	queueBytes            int64
	bufferBytes           int64
	finish, stall, drain  time.Duration
	client                clientFlags
	command               []string
}

func proxyFlagSet() (*flag.FlagSet, *proxyFlags) {
	f := &proxyFlags{}
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	fs.StringVar(&f.out, "out", "", "append the record to FILE (- for stderr): one protojson ShellExec per line;\n"+
		"{pid} in FILE is the proxy's process id")
	fs.StringVar(&f.revisions, "revisions", "final", "what --out gets: final (each call's final state, when it ends, and again if it changes after) or all (every revision)")
	fs.StringVar(&f.wire, "wire", "", "also write the raw exchange to FILE (replaced), in the recording format\n"+
		"'acpnormd replay' reads; {pid} in FILE is the proxy's process id")
	fs.StringVar(&f.addr, "addr", "", "send the frames to the acpnormd at this address, or at the first of A,B,C that answers\n"+
		"(reconnecting, and sending again what had no answer); empty normalizes in this process")
	fs.StringVar(&f.session, "session", "", "session id for the record (default: the ACP session id); later sessions of the\n"+
		"same agent get -2, -3, ...")
	fs.StringVar(&f.dialct, "dialect", "auto", "dialect name ("+strings.Join(dialectNames(), ", ")+") or auto")
	fs.IntVar(&f.maxFrame, "max-frame", proxy.DefaultMaxFrame, "a line longer than this many bytes is relayed whole but not normalized (counted)")
	fs.Int64Var(&f.queueBytes, "queue-bytes", proxy.DefaultQueueBytes, "bytes of lines waiting for normalization; past that, lines are dropped from\n"+
		"normalization (counted), never from the relay")
	fs.Int64Var(&f.bufferBytes, "buffer-bytes", proxy.DefaultBufferBytes, "with --addr: bytes of frames no acpnormd has answered yet (it is down or behind);\n"+
		"past that, frames are dropped from normalization (counted), never from the relay")
	fs.DurationVar(&f.finish, "finish-timeout", proxy.DefaultFinish, "after the agent exits, wait this long at most for the last of the record")
	fs.DurationVar(&f.stall, "stall-timeout", proxy.DefaultStall, "after the agent exits, a write to the client (or to stderr) that makes no progress this long\n"+
		"ends that relay: said, and the proxy exits nonzero")
	fs.DurationVar(&f.drain, "drain-timeout", proxy.DefaultDrain, "after the agent exits, read its stdout and stderr this long at most once all it left there\n"+
		"was read (a child of the agent may hold them and write on)")
	f.client.register(fs)
	return fs, f
}

func parseProxy(args []string) (*proxyFlags, error) {
	fs, f := proxyFlagSet()
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	f.command = fs.Args()
	switch {
	case len(f.command) == 0:
		return nil, usagef("proxy needs the agent's command after the flags: acpnormd proxy [flags] -- AGENT [ARGS...]")
	case f.out == "" && f.wire == "" && f.addr == "":
		return nil, usagef("proxy records nothing without --out, --wire or --addr")
	case f.revisions != "final" && f.revisions != "all":
		return nil, usagef("--revisions %q: want final or all", f.revisions)
	case !knownDialect(f.dialct):
		return nil, usagef("unknown dialect %q; the dialects are %s, or auto", f.dialct, strings.Join(dialectNames(), ", "))
	case f.maxFrame < 1:
		return nil, usagef("--max-frame %d is below 1", f.maxFrame)
	case f.queueBytes < int64(f.maxFrame):
		return nil, usagef("--queue-bytes %d is below --max-frame %d: a line that large could never be queued", f.queueBytes, f.maxFrame)
	case f.bufferBytes < 1:
		return nil, usagef("--buffer-bytes %d is below 1", f.bufferBytes)
	case f.addr != "" && f.bufferBytes < int64(f.maxFrame):
		return nil, usagef("--buffer-bytes %d is below --max-frame %d: a frame that large would be dropped from normalization with nothing else waiting", f.bufferBytes, f.maxFrame)
	case f.addr != "" && len(addrList(f.addr)) == 0:
		return nil, usagef("--addr %q names no address", f.addr)
	case f.finish <= 0:
		return nil, usagef("--finish-timeout %v is not positive", f.finish)
	case f.stall <= 0:
		return nil, usagef("--stall-timeout %v is not positive", f.stall)
	case f.drain <= 0:
		return nil, usagef("--drain-timeout %v is not positive", f.drain)
	case f.addr == "" && f.client.set():
		return nil, usagef("--tls, --ca-file, --cert-file, --key-file, --server-name and --token-file are for a server named by --addr")
	case f.out != "" && f.out == f.wire:
		return nil, usagef("--out and --wire name the same file %q", f.out)
	}
	return f, nil
}

// exitStatus is an exit status to end with, whatever was to say said.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func proxyCmd(args []string, stdout, stderr io.Writer) error {
	f, err := parseProxy(args)
	if err != nil {
		return err
	}
	errLines := newStderrLines(stderr)
	say := func(msg string) { _, _ = errLines.line([]byte("acpnormd proxy: " + msg + "\n")) }
	rec := &proxy.Recorder{Session: f.session, Dialect: f.dialct, AllRevisions: f.revisions == "all", Say: say}

	var closers []func()
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}()
	// The record is appended to, so that one file can collect every run;
	// the wire recording is one run's. Both may hold command output: only
	// their owner reads them.
	open := func(name, what string, flags int) (io.Writer, error) {
		if name == "-" {
			return wholeLines{errLines}, nil
		}
		name = strings.ReplaceAll(name, "{pid}", strconv.Itoa(os.Getpid()))
		fh, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|flags, 0o600)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		closers = append(closers, func() { fh.Close() })
		return fh, nil
	}
	if f.out != "" {
		if rec.Out, err = open(f.out, "--out", os.O_APPEND); err != nil {
			return err
		}
	}
	if f.wire != "" {
		if f.wire == "-" {
			return usagef("--wire takes a FILE, not -")
		}
		if rec.Wire, err = open(f.wire, "--wire", os.O_TRUNC); err != nil {
			return err
		}
	}
	if f.addr != "" {
		opts, err := f.client.dialOptions()
		if err != nil {
			return err
		}
		// Each ACP session keeps its frames to rebuild it after a loss
		// (DATA_LOSS), within the bounds of the client's Session.
		c, err := client.New(addrList(f.addr), client.WithBackoff(remoteMinWait, remoteMaxWait),
			client.WithDialOptions(opts...),
			client.WithSessionLimits(remoteSessionFrames, remoteSessionBytes))
		if err != nil {
			return err
		}
		closers = append(closers, func() { c.Close() })
		rec.Remote, rec.BufferBytes, rec.Service = c, f.bufferBytes, "acpnormd at "+strings.Join(addrList(f.addr), ",")
	} else if f.out != "" {
		client, stop, err := inProcess(f.maxFrame)
		if err != nil {
			return err
		}
		closers = append(closers, stop)
		rec.Client, rec.Service = client, "the in-process normalizer"
	}

	// Signals go to the agent; the proxy ends when the agent does. A
	// client that stops reading gives EPIPE on write, not a SIGPIPE death.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	defer signal.Stop(sigs)

	// The agent's stderr is copied, taking turns with the notices and
	// the records written to stderr, so that each of those starts on a
	// line of its own (see stderrLines). A terminal (or /dev/null) is
	// handed to the agent as it is instead, so that the agent still sees
	// a terminal there: the proxy then cannot see where the agent's line
	// stands, and a notice may follow an unfinished line.
	var agentErr io.Writer = errLines
	if fh, ok := stderr.(*os.File); ok && charDevice(fh) {
		agentErr = fh
	}
	res, err := proxy.Run(context.Background(), proxy.Config{
		Command: f.command, Stdin: os.Stdin, Stdout: stdout, Stderr: agentErr,
		Signals: sigs, Recorder: rec, Say: say,
		MaxFrame: f.maxFrame, QueueLines: proxy.DefaultQueueLines, QueueBytes: f.queueBytes, Finish: f.finish,
		Stall: f.stall, Drain: f.drain, StderrGone: errLines.abandon,
	})
	if err != nil {
		say(err.Error())
		return exitStatus(res.Status)
	}
	if s := summary(res.Drops, rec.Stats()); s != "" {
		say(s)
	}
	if res.Status != 0 {
		return exitStatus(res.Status)
	}
	if res.ClientStalled || res.StderrStalled {
		return exitStatus(1) // the agent exited 0, but not all it wrote was relayed
	}
	return nil
}

// stderrLines is the proxy's stderr, which the agent's stderr, the
// proxy's notices and a record written to - (--out -) share. It
// remembers whether the last byte written ended a line, so that a notice
// or a record, written whole by line, starts on a line of its own: after
// an agent's unfinished line it writes a newline first. The agent's own
// bytes (Write) go through as they are. Its methods are safe for
// concurrent use; each write is whole before the next begins. (It has no
// ReadFrom: a copy into a bytes.Buffer would read into the buffer's own
// slice and lose a notice written meanwhile.) Once abandoned (stderr's
// reader took nothing for the stall bound), nothing more is written,
// and a write waiting for its turn behind the stuck one gives up.
type stderrLines struct {
	turn   chan struct{} // holds a token while a write is in progress
	gone   chan struct{}
	once   sync.Once
	w      io.Writer
	inLine bool // the last byte written was not a newline
}

var errStderrGone = errors.New("stderr takes nothing: given up")

func newStderrLines(w io.Writer) *stderrLines {
	return &stderrLines{turn: make(chan struct{}, 1), gone: make(chan struct{}), w: w}
}

// lock waits for the turn to write; false once abandoned.
func (s *stderrLines) lock() bool {
	select {
	case <-s.gone:
		return false
	default:
	}
	select {
	case s.turn <- struct{}{}:
		return true
	case <-s.gone:
		return false
	}
}

func (s *stderrLines) unlock() { <-s.turn }

// abandon makes every later write, and every one waiting, give up.
func (s *stderrLines) abandon() { s.once.Do(func() { close(s.gone) }) }

// Write writes the agent's bytes.
func (s *stderrLines) Write(p []byte) (int, error) {
	if !s.lock() {
		return 0, errStderrGone
	}
	defer s.unlock()
	return s.write(p)
}

// line writes p, one or more whole lines, on a line of its own.
func (s *stderrLines) line(p []byte) (int, error) {
	if !s.lock() {
		return 0, errStderrGone
	}
	defer s.unlock()
	if s.inLine {
		if _, err := s.write([]byte{'\n'}); err != nil {
			return 0, err
		}
	}
	return s.write(p)
}

func (s *stderrLines) write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if n > 0 {
		s.inLine = p[n-1] != '\n'
	}
	return n, err
}

// wholeLines writes to a stderrLines by line.
type wholeLines struct{ s *stderrLines }

func (w wholeLines) Write(p []byte) (int, error) { return w.s.line(p) }

// charDevice says whether f is a character device: a terminal, or
// /dev/null.
func charDevice(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// summary is the line said at exit when normalization missed anything.
func summary(d proxy.Drops, st proxy.Stats) string {
	var parts []string
	if d.Behind > 0 {
		parts = append(parts, fmt.Sprintf("%d lines (%d bytes) dropped from normalization while it was behind", d.Behind, d.BehindBytes))
	}
	if d.TooBig > 0 {
		parts = append(parts, fmt.Sprintf("%d lines (%d bytes) over --max-frame relayed but not normalized", d.TooBig, d.TooBigBytes))
	}
	if st.Dropped > 0 {
		parts = append(parts, fmt.Sprintf("%d frames (%d bytes) dropped from normalization while --buffer-bytes of frames had no answer (wire lines %d to %d)", st.Dropped, st.DroppedBytes, st.DroppedFirstLine, st.DroppedLastLine))
	}
	if st.Reconnects > 0 || st.Losses > 0 {
		parts = append(parts, fmt.Sprintf("%d reconnect(s), %d frame(s) sent again, %d loss(es) rebuilt", st.Reconnects, st.Resent, st.Losses))
	}
	if st.Unsent > 0 {
		parts = append(parts, fmt.Sprintf("%d frames not normalized after the normalizer stopped", st.Unsent))
	}
	if st.FrameErrors > 0 {
		parts = append(parts, fmt.Sprintf("%d frame errors", st.FrameErrors))
	}
	if st.NotJSON > 0 {
		parts = append(parts, fmt.Sprintf("%d lines that were not JSON relayed and skipped", st.NotJSON))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("of %d frames: %s", st.Frames, strings.Join(parts, "; "))
}

// inProcess serves the real service in this process over an in-memory
// connection, for one client: sessions live until the agent exits.
func inProcess(maxFrame int) (pb.NormalizerServiceClient, func(), error) {
	cfg := service.DefaultConfig()
	cfg.TTL = 7 * 24 * time.Hour // the proxy closes its sessions itself
	svc, err := service.New(cfg, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	opts := service.DefaultServerOptions()
	opts.MaxMessageBytes = max(opts.MaxMessageBytes, maxFrame+64<<10)
	srv := service.NewServer(svc, opts, nil)
	lis := bufconn.Listen(1 << 20)
	ctx, cancel := context.WithCancel(context.Background())
	go svc.Run(ctx)
	go srv.Serve(lis)
	conn, err := grpc.NewClient("passthrough:///acpnormd-proxy",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(opts.MaxMessageBytes)))
	if err != nil {
		cancel()
		srv.GRPC.Stop()
		return nil, nil, err
	}
	return pb.NewNormalizerServiceClient(conn), func() { conn.Close(); srv.GRPC.Stop(); cancel() }, nil
}
