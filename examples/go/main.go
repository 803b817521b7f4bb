// Command example is a minimal orchestrator: it streams an ACP recording to a
// running acpnormd and prints every ShellExec revision and FrameError the
// server answers with.
//
//	go run ./examples/go [--addr 127.0.0.1:50051] FILE.ndjson
//
// Each line of FILE is a recorder envelope {"dir", "t_ms", "msg"} or a bare
// JSON-RPC message. Like an orchestrator, it sends a TurnEnded when the agent
// answers a session/prompt request and a SessionClosed at the end. At the
// end it prints each call's state folded from its revisions (package fold).
//
// --ca-file (TLS), --cert-file/--key-file (mutual TLS) and --token-file (a
// bearer token, sent as `authorization: Bearer <token>`) reach a server that
// requires them.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/acpnorm/acpnorm/fold"
	acpnormv1 "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// access is how to reach a server that requires TLS or a token.
type access struct {
	caFile, certFile, keyFile, tokenFile, serverName string
}

func main() {
	addr := flag.String("addr", "127.0.0.1:50051", "acpnormd gRPC address")
	session := flag.String("session", "", "session id (default: the file name)")
	dialect := flag.String("dialect", "auto", "dialect name or auto")
	var acc access
	flag.StringVar(&acc.caFile, "ca-file", "", "PEM CA bundle: use TLS and trust these roots")
	flag.StringVar(&acc.certFile, "cert-file", "", "PEM client certificate, for mutual TLS (with --key-file)")
	flag.StringVar(&acc.keyFile, "key-file", "", "PEM client key, for mutual TLS")
	flag.StringVar(&acc.tokenFile, "token-file", "", "file holding the bearer token to send")
	flag.StringVar(&acc.serverName, "server-name", "", "name to check in the server's certificate (default: the host of --addr)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: %s [flags] FILE.ndjson\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	file := flag.Arg(0)
	if *session == "" {
		*session = filepath.Base(file)
	}
	if err := run(*addr, file, *session, *dialect, acc); err != nil {
		// One line: a status from the server, or what kept us from asking.
		if s, ok := status.FromError(err); ok {
			fmt.Fprintf(os.Stderr, "acpnorm: %s: %s: %s\n", *addr, s.Code(), s.Message())
		} else {
			fmt.Fprintf(os.Stderr, "acpnorm: %v\n", err)
		}
		os.Exit(1)
	}
}

// dialOptions turns the access flags into gRPC dial options: plaintext, TLS
// or mutual TLS, and the token as per-RPC credentials.
func dialOptions(acc access) ([]grpc.DialOption, error) {
	creds := insecure.NewCredentials()
	secure := acc.caFile != "" || acc.certFile != "" || acc.serverName != ""
	if secure {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: acc.serverName}
		if acc.caFile != "" {
			pem, err := os.ReadFile(acc.caFile)
			if err != nil {
				return nil, err
			}
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("%s: no PEM certificate in it", acc.caFile)
			}
		}
		if (acc.certFile == "") != (acc.keyFile == "") {
			return nil, errors.New("--cert-file and --key-file go together (mutual TLS needs both)")
		}
		if acc.certFile != "" {
			cert, err := tls.LoadX509KeyPair(acc.certFile, acc.keyFile)
			if err != nil {
				return nil, err
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		creds = credentials.NewTLS(cfg)
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds)}
	if acc.tokenFile != "" {
		raw, err := os.ReadFile(acc.tokenFile)
		if err != nil {
			return nil, err
		}
		token := strings.TrimSpace(string(raw))
		if token == "" || strings.ContainsAny(token, "\r\n") {
			return nil, fmt.Errorf("%s: the token is empty or spans lines", acc.tokenFile)
		}
		opts = append(opts, grpc.WithPerRPCCredentials(bearer{token: token, secure: secure}))
	}
	return opts, nil
}

// bearer sends `authorization: Bearer <token>` on every call. Over TLS gRPC
// refuses to send it on a connection without transport security; without
// TLS (loopback) it is sent in the clear.
type bearer struct {
	token  string
	secure bool
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

func (b bearer) RequireTransportSecurity() bool { return b.secure }

func run(addr, file, session, dialect string, acc access) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()

	opts, err := dialOptions(acc)
	if err != nil {
		return err
	}
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return err
	}
	defer conn.Close()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	stream, err := acpnormv1.NewNormalizerServiceClient(conn).Normalize(ctx)
	if err != nil {
		return err
	}

	sendErr := make(chan error, 1)
	go func() { sendErr <- send(stream, f, session, dialect) }()

	var calls fold.Folder
	for {
		res, err := stream.Recv()
		if err == io.EOF {
			if err := <-sendErr; err != nil {
				return err
			}
			fmt.Println("folded:")
			for _, k := range calls.Calls() {
				x := calls.State(k)
				fmt.Printf("%s, output %d B\n", describe(x), len(x.GetOutput().GetText()))
			}
			return nil
		}
		if err != nil {
			return err
		}
		switch k := res.Kind.(type) {
		case *acpnormv1.NormalizeResponse_ShellExec:
			fmt.Println(describe(k.ShellExec))
			if err := calls.Apply(k.ShellExec); err != nil {
				return err
			}
		case *acpnormv1.NormalizeResponse_FrameError:
			e := k.FrameError
			fmt.Printf("frame error seq=%d code=%d: %s\n", e.Sequence, e.Code, e.Message)
		}
	}
}

func describe(e *acpnormv1.ShellExec) string {
	line := fmt.Sprintf("%s rev=%d %s", e.ToolCallId, e.Revision, strings.TrimPrefix(e.State.String(), "SHELL_STATE_"))
	if e.State == acpnormv1.ShellState_SHELL_STATE_ENDED {
		line += " " + strings.TrimPrefix(e.Outcome.String(), "SHELL_OUTCOME_")
		if e.ExitCode != nil {
			line += fmt.Sprintf(" exit=%d", *e.ExitCode)
		}
	}
	return line + " $ " + e.Command
}

// send streams one AcpFrame per line of r, a TurnEnded after each answered
// session/prompt, and a SessionClosed at the end, then half-closes.
func send(stream grpc.BidiStreamingClient[acpnormv1.NormalizeRequest, acpnormv1.NormalizeResponse], r io.Reader, session, dialect string) error {
	var seq uint64
	next := func() uint64 { seq++; return seq }
	prompts := map[string]bool{} // ids of unanswered session/prompt requests

	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		dir, msg := parseLine([]byte(line))
		frame := &acpnormv1.AcpFrame{SessionId: session, Dialect: dialect, Sequence: next(), Direction: dir, Message: msg}
		if err := stream.Send(&acpnormv1.NormalizeRequest{Kind: &acpnormv1.NormalizeRequest_Frame{Frame: frame}}); err != nil {
			return err
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method *string         `json:"method"`
			Result struct {
				StopReason string `json:"stopReason"`
			} `json:"result"`
		}
		if json.Unmarshal(msg, &m) != nil || len(m.ID) == 0 || string(m.ID) == "null" {
			continue
		}
		id := string(m.ID)
		switch {
		case m.Method != nil && *m.Method == "session/prompt":
			prompts[id] = true
		case m.Method == nil && prompts[id]:
			delete(prompts, id)
			te := &acpnormv1.TurnEnded{SessionId: session, Sequence: next(), Cancelled: m.Result.StopReason == "cancelled"}
			if err := stream.Send(&acpnormv1.NormalizeRequest{Kind: &acpnormv1.NormalizeRequest_TurnEnded{TurnEnded: te}}); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	closed := &acpnormv1.SessionClosed{SessionId: session, Sequence: next()}
	if err := stream.Send(&acpnormv1.NormalizeRequest{Kind: &acpnormv1.NormalizeRequest_SessionClosed{SessionClosed: closed}}); err != nil {
		return err
	}
	return stream.CloseSend()
}

// parseLine reads a recorder envelope {"dir", "t_ms", "msg"} or a bare
// message. Anything else goes to the server as it is, to be reported.
func parseLine(line []byte) (acpnormv1.Direction, []byte) {
	var env struct {
		Dir string          `json:"dir"`
		Msg json.RawMessage `json:"msg"`
	}
	if json.Unmarshal(line, &env) == nil && env.Dir != "" && len(env.Msg) > 0 {
		switch env.Dir {
		case "agent->client":
			return acpnormv1.Direction_DIRECTION_AGENT_TO_CLIENT, env.Msg
		case "client->agent":
			return acpnormv1.Direction_DIRECTION_CLIENT_TO_AGENT, env.Msg
		}
		return acpnormv1.Direction_DIRECTION_UNSPECIFIED, env.Msg
	}
	return acpnormv1.Direction_DIRECTION_UNSPECIFIED, line
}
