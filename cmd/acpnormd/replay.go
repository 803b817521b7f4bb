package main

import (
	"bytes"
	"context"
	_ "embed"
	"flag"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/dialect"
	"github.com/acpnorm/acpnorm/internal/replay"
	"github.com/acpnorm/acpnorm/internal/service"
	"google.golang.org/protobuf/encoding/protojson"
)

type replayFlags struct {
	addr, dialect, session, cwd      string
	json, final, keepOpen, keepGoing bool
	explain                          bool
	timeout, pace                    time.Duration
	file                             string
	client                           clientFlags
}

func replayFlagSet() (*flag.FlagSet, *replayFlags) {
	f := &replayFlags{}
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.StringVar(&f.addr, "addr", "", "address of a running acpnormd, or several, comma-separated (A,B,C): when a stream breaks, replay\n"+
		"moves to the next and sends again what had no answer; empty starts one in-process on a loopback port")
	fs.StringVar(&f.dialect, "dialect", "auto", "dialect name ("+strings.Join(dialectNames(), ", ")+") or auto; checked before anything is sent")
	fs.StringVar(&f.session, "session", "", "session id to use (default: the file's base name)")
	fs.StringVar(&f.cwd, "cwd", "", "the session's absolute working directory, if the recording lacks session/new")
	fs.BoolVar(&f.json, "json", false, "print protojson ShellExec revisions, one per line, instead of a table")
	fs.BoolVar(&f.final, "final", false, "with --json, print only each call's last revision with its texts reassembled;\n"+
		"the table always shows each call's final state, so it is the same with or without --final")
	fs.BoolVar(&f.keepOpen, "keep-open", false, "do not close the session at the end of the file")
	fs.BoolVar(&f.keepGoing, "keep-going", false, "exit 0 even when the recording had frame errors (they are still printed)")
	fs.BoolVar(&f.explain, "explain", false, "print, for every call, where its command, cwd, exit status and output came from (frame and field),\n"+
		"what was kept out of output as a notice and what the dialect did not understand; runs in-process (not with --addr or --json)")
	fs.DurationVar(&f.timeout, "timeout", time.Minute, "give up after this long")
	fs.DurationVar(&f.pace, "pace", 0, "wait this long between frames (so that a fault can land mid-session)")
	f.client.register(fs)
	return fs, f
}

func parseReplay(args []string) (*replayFlags, error) {
	fs, f := replayFlagSet()
	// Flags may come before or after FILE.
	var rest []string
	for {
		if err := parseFlags(fs, args); err != nil {
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
		return nil, usagef("replay takes at most one FILE, got %d: %q", len(rest), rest)
	}
	if f.explain && (f.addr != "" || f.json) {
		return nil, usagef("--explain reads the recording in-process and prints text: it takes neither --addr nor --json")
	}
	if f.addr == "" && f.client.set() {
		return nil, usagef("--tls, --ca-file, --cert-file, --key-file, --server-name and --token-file are for a server named by --addr")
	}
	if f.pace < 0 {
		return nil, usagef("--pace %v: want a duration of 0 or more", f.pace)
	}
	if f.timeout <= 0 {
		return nil, usagef("--timeout %v: want a duration above 0", f.timeout)
	}
	if !utf8.ValidString(f.session) {
		return nil, usagef("--session %q is not valid UTF-8, as a session id must be", f.session)
	}
	if f.addr != "" && len(addrList(f.addr)) == 0 {
		return nil, usagef("--addr %q names no address", f.addr)
	}
	if !knownDialect(f.dialect) {
		return nil, usagef("unknown dialect %q; the dialects are %s, or auto", f.dialect, strings.Join(dialectNames(), ", "))
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

func replayCmd(args []string, stdout, stderr io.Writer) error {
	f, err := parseReplay(args)
	if err != nil {
		return err
	}
	lines, err := readRecording(f.file, stderr)
	if err != nil {
		return err
	}
	if f.explain {
		errs, err := explain(stdout, lines, f)
		if err == nil && errs > 0 && !f.keepGoing {
			err = fmt.Errorf("%d frame error(s) in %s (printed above); --keep-going exits 0 anyway", errs, recordingName(f.file))
		}
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()

	opts, err := f.client.dialOptions()
	if err != nil {
		return err
	}
	addrs := addrList(f.addr)
	if len(addrs) == 0 {
		stop, a, err := startInProcess()
		if err != nil {
			return err
		}
		defer stop()
		addrs = []string{a}
	}
	resps, err := playSession(ctx, addrs, opts, lines, f, stderr)
	if err != nil {
		return err
	}
	calls, frameErrs := replay.Fold(resps)
	for _, fe := range frameErrs {
		fmt.Fprintf(stderr, "frame error: line %d: code %d: %s\n", fe.GetSequence(), fe.GetCode(), fe.GetMessage())
	}
	switch {
	case len(calls) == 0:
		// In place of an empty table; with --json, stdout stays JSON only.
		w := stdout
		if f.json {
			w = stderr
		}
		fmt.Fprintf(w, "no shell commands found in %d lines of %s\n", len(lines), recordingName(f.file))
	case f.json && f.final:
		for _, c := range calls {
			if err := printJSON(stdout, c.Last); err != nil {
				return err
			}
		}
	case f.json:
		for _, r := range resps {
			if x := r.GetShellExec(); x != nil {
				if err := printJSON(stdout, x); err != nil {
					return err
				}
			}
		}
	default:
		printTable(stdout, calls)
	}
	if len(frameErrs) > 0 && !f.keepGoing {
		return fmt.Errorf("%d frame error(s) in %s (printed above); --keep-going exits 0 anyway", len(frameErrs), recordingName(f.file))
	}
	return nil
}

// knownDialect reports whether name is auto or a dialect of this build.
func knownDialect(name string) bool {
	if strings.EqualFold(strings.TrimSpace(name), dialect.Auto) {
		return true
	}
	_, ok := dialect.Lookup(name)
	return ok
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

// recordingName names the file, or the embedded sample when file is empty.
func recordingName(file string) string {
	if file == "" {
		return "the embedded sample " + sampleName
	}
	return file
}

// readRecording reads the file, or the embedded sample when file is empty.
func readRecording(file string, stderr io.Writer) ([]replay.Line, error) {
	if file == "" {
		fmt.Fprintf(stderr, "replaying the embedded sample recording %s\n", sampleName)
		return replay.Read(bytes.NewReader(sample))
	}
	return replay.ReadFile(file)
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
