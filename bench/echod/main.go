// Command echod is the baseline of the load benchmarks: a NormalizerService
// that does no work. For every request of a Normalize stream it sends one
// small ShellExec carrying the request's session id and sequence, so that a
// load client sees the same message types and the same gRPC path as with
// acpnormd, and nothing else. Comparing acpnormd with it in the same run
// tells what acpnorm's own work costs, whatever the machine.
//
// With -scan it is the floor of an exact reader instead: before answering
// a frame it validates the frame's JSON message with jsontext
// (the tokenizer's whole check, what acpnorm's own read is measured against
// in internal/dialect's BenchmarkRead), and answers an invalid one with a
// FrameError. Its answers are as small as echo's: what acpnorm sends beyond
// them (the revisions' output) is not part of this floor.
//
// Usage:
//
//	echod [-listen 127.0.0.1:0] [-scan]
//
// It prints the address it listens on ("listening 127.0.0.1:PORT") on
// stdout, and stops on SIGINT or SIGTERM.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/go-json-experiment/json/jsontext"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/reflection"
)

type echo struct {
	pb.UnimplementedNormalizerServiceServer
	scan bool // validate each frame's message before answering
}

// Normalize answers each request at once, on the handler's goroutine.
func (e echo) Normalize(stream pb.NormalizerService_NormalizeServer) error {
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		var sid string
		var seq uint64
		switch k := req.GetKind().(type) {
		case *pb.NormalizeRequest_Frame:
			sid, seq = k.Frame.GetSessionId(), k.Frame.GetSequence()
			if e.scan && !jsontext.Value(k.Frame.GetMessage()).IsValid() {
				fe := &pb.FrameError{SessionId: sid, Sequence: seq, Code: int32(codes.InvalidArgument), Message: "message is not valid JSON"}
				if err := stream.Send(&pb.NormalizeResponse{Kind: &pb.NormalizeResponse_FrameError{FrameError: fe}}); err != nil {
					return err
				}
				continue
			}
		case *pb.NormalizeRequest_TurnEnded:
			sid, seq = k.TurnEnded.GetSessionId(), k.TurnEnded.GetSequence()
		case *pb.NormalizeRequest_SessionClosed:
			sid, seq = k.SessionClosed.GetSessionId(), k.SessionClosed.GetSequence()
		}
		x := &pb.ShellExec{
			SessionId:  sid,
			ToolCallId: "echo",
			Revision:   1,
			Dialect:    "echo",
			State:      pb.ShellState_SHELL_STATE_RUNNING,
			Sequence:   seq,
		}
		if err := stream.Send(&pb.NormalizeResponse{Kind: &pb.NormalizeResponse_ShellExec{ShellExec: x}}); err != nil {
			return err
		}
	}
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "gRPC listen address")
	scan := flag.Bool("scan", false, "validate each frame's JSON message (jsontext) before answering: the floor of an exact reader")
	flag.Parse()
	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "echod:", err)
		os.Exit(1)
	}
	// The same receive limit as acpnormd's default, so that both accept
	// the same frames.
	g := grpc.NewServer(grpc.MaxRecvMsgSize(16 << 20))
	pb.RegisterNormalizerServiceServer(g, echo{scan: *scan})
	reflection.Register(g)
	fmt.Printf("listening %s\n", lis.Addr())
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
		<-sig
		g.Stop()
	}()
	if err := g.Serve(lis); err != nil {
		fmt.Fprintln(os.Stderr, "echod:", err)
		os.Exit(1)
	}
}
