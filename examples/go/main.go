// Command example is a minimal orchestrator: it streams an ACP recording to a
// running acpnormd and prints every ShellExec revision and FrameError the
// server answers with.
//
//	go run ./examples/go [--addr 127.0.0.1:50051] FILE.ndjson
//
// Each line of FILE is a recorder envelope {"dir", "t_ms", "msg"} or a bare
// JSON-RPC message. Like an orchestrator, it sends a TurnEnded when the agent
// answers a session/prompt request and a SessionClosed at the end.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	acpnormv1 "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:50051", "acpnormd gRPC address")
	session := flag.String("session", "", "session id (default: the file name)")
	dialect := flag.String("dialect", "auto", "dialect name or auto")
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
	if err := run(*addr, file, *session, *dialect); err != nil {
		log.Fatal(err)
	}
}

func run(addr, file, session, dialect string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()

	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
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

	for {
		res, err := stream.Recv()
		if err == io.EOF {
			return <-sendErr
		}
		if err != nil {
			return err
		}
		switch k := res.Kind.(type) {
		case *acpnormv1.NormalizeResponse_ShellExec:
			fmt.Println(describe(k.ShellExec))
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
