package main

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/dialect"
	"github.com/acpnorm/acpnorm/internal/replay"
	"github.com/acpnorm/acpnorm/internal/service"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
)

type replayFlags struct {
	addr, dialect, session, cwd string
	json, final, keepOpen       bool
	timeout                     time.Duration
	file                        string
}

func parseReplay(args []string) (*replayFlags, error) {
	f := &replayFlags{}
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: acpnormd replay [flags] [FILE]\n\nPlays a recorded ACP wire log (newline-delimited JSON) through the service\nand prints one row per shell command. Without FILE it plays an embedded\nreal recording of claude-agent-acp running nine shell commands.\n\nflags:")
		fs.PrintDefaults()
	}
	fs.StringVar(&f.addr, "addr", "", "address of a running acpnormd; empty starts one in-process on a loopback port")
	fs.StringVar(&f.dialect, "dialect", "auto", "dialect name ("+strings.Join(dialectNames(), ", ")+") or auto")
	fs.StringVar(&f.session, "session", "", "session id to use (default: the file's base name)")
	fs.StringVar(&f.cwd, "cwd", "", "the session's absolute working directory, if the recording lacks session/new")
	fs.BoolVar(&f.json, "json", false, "print one protojson ShellExec per line instead of a table")
	fs.BoolVar(&f.final, "final", false, "only the last revision of each call (its texts reassembled)")
	fs.BoolVar(&f.keepOpen, "keep-open", false, "do not close the session at the end of the file")
	fs.DurationVar(&f.timeout, "timeout", time.Minute, "give up after this long")
	// Flags may come before or after FILE.
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			break
		}
		rest = append(rest, fs.Arg(0))
		args = fs.Args()[1:]
	}
	switch len(rest) {
	case 0: // the embedded sample
	case 1:
		f.file = rest[0]
	default:
		fs.Usage()
		return nil, fmt.Errorf("replay takes at most one FILE, got %d", len(rest))
	}
	name := f.file
	if name == "" {
		name = sampleName
	}
	if f.session == "" {
		f.session = strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))
	}
	return f, nil
}

func replayCmd(args []string) error {
	f, err := parseReplay(args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	lines, err := readRecording(f.file)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()

	addr := f.addr
	if addr == "" {
		stop, a, err := startInProcess()
		if err != nil {
			return err
		}
		defer stop()
		addr = a
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	resps, err := replay.Play(ctx, pb.NewNormalizerServiceClient(conn), lines, replay.Options{
		SessionID: f.session, Dialect: f.dialect, Cwd: f.cwd, KeepOpen: f.keepOpen,
	})
	if err != nil {
		return err
	}
	calls, frameErrs := replay.Fold(resps)
	for _, fe := range frameErrs {
		fmt.Fprintf(os.Stderr, "frame error: line %d: code %d: %s\n", fe.GetSequence(), fe.GetCode(), fe.GetMessage())
	}
	switch {
	case f.json && f.final:
		for _, c := range calls {
			if err := printJSON(os.Stdout, c.Last); err != nil {
				return err
			}
		}
	case f.json:
		for _, r := range resps {
			if x := r.GetShellExec(); x != nil {
				if err := printJSON(os.Stdout, x); err != nil {
					return err
				}
			}
		}
	default:
		printTable(os.Stdout, calls)
	}
	return nil
}

// dialectNames lists the dialects of this build.
func dialectNames() []string {
	var names []string
	for _, d := range dialect.All() {
		names = append(names, d.Info().Name)
	}
	return names
}

// sample is a real recording of claude-agent-acp 0.101.0 running nine shell
// commands (exit codes, stderr, slow and large output, bad UTF-8, a timeout
// and a signal); replay plays it when no FILE is given.
//
//go:embed sample/claude-agent-acp-0.101.0_terminal-meta.ndjson
var sample []byte

const sampleName = "claude-agent-acp-0.101.0_terminal-meta.ndjson"

// readRecording reads the file, or the embedded sample when file is empty.
func readRecording(file string) ([]replay.Line, error) {
	if file == "" {
		fmt.Fprintf(os.Stderr, "replaying the embedded sample recording %s\n", sampleName)
		return replay.Read(bytes.NewReader(sample))
	}
	fh, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	lines, err := replay.Read(fh)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return lines, nil
}

// startInProcess serves the real service on a loopback port.
func startInProcess() (stop func(), addr string, err error) {
	svc, err := service.New(service.DefaultConfig(), nil, nil)
	if err != nil {
		return nil, "", err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	srv := service.NewServer(svc, service.DefaultServerOptions(), nil)
	go srv.Serve(lis)
	return srv.GRPC.Stop, lis.Addr().String(), nil
}

func printJSON(w io.Writer, x *pb.ShellExec) error {
	b, err := protojson.Marshal(x)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func printTable(w io.Writer, calls []*replay.Call) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "COMMAND\tSTATE\tOUTCOME\tEXIT\tOUTPUT\tLAST LINES")
	for _, c := range calls {
		x := c.Last
		exit := "-"
		if x.ExitCode != nil {
			exit = fmt.Sprint(x.GetExitCode())
		}
		text := x.GetOutput()
		if text == nil {
			text = x.GetStdout()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n",
			clip(oneLine(x.GetCommand()), 48),
			strings.TrimPrefix(x.GetState().String(), "SHELL_STATE_"),
			strings.TrimPrefix(x.GetOutcome().String(), "SHELL_OUTCOME_"),
			exit, size(text), clip(lastLines(text.GetText(), 2), 60))
	}
	tw.Flush()
}

func size(t *pb.ShellText) string {
	if t == nil {
		return "-"
	}
	s := fmt.Sprintf("%d B", t.GetTotalBytes())
	if t.GetTruncated() {
		s += " (truncated)"
	}
	return s
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " ⏎ ")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
