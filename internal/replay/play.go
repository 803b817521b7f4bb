package replay

import (
	"context"
	"errors"
	"fmt"
	"io"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
)

// Options say how to play a recording.
type Options struct {
	// SessionID names the session; required.
	SessionID string
	// Dialect is a dialect name or "auto".
	Dialect string
	// Cwd is the session's working directory, if known beforehand.
	Cwd string
	// KeepOpen leaves the session open at the end instead of closing it
	// (closing ends every call still open as UNKNOWN).
	KeepOpen bool
}

// Play streams every line as one AcpFrame (sequence = line number) and
// returns every response in the order received. Sending and receiving run
// concurrently, as a real orchestrator's would.
func Play(ctx context.Context, c pb.NormalizerServiceClient, lines []Line, opts Options) ([]*pb.NormalizeResponse, error) {
	if opts.SessionID == "" {
		return nil, errors.New("replay: no session id")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.Normalize(ctx)
	if err != nil {
		return nil, fmt.Errorf("opening Normalize stream: %w", err)
	}
	sendErr := make(chan error, 1)
	go func() {
		sendErr <- send(stream, lines, opts)
	}()
	var out []*pb.NormalizeResponse
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return out, fmt.Errorf("receiving: %w", err)
		}
		out = append(out, r)
	}
	if err := <-sendErr; err != nil {
		return out, err
	}
	return out, nil
}

func send(stream pb.NormalizerService_NormalizeClient, lines []Line, opts Options) error {
	var last uint64
	for _, l := range lines {
		last = uint64(l.Number)
		req := &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{
			SessionId: opts.SessionID,
			Dialect:   opts.Dialect,
			Cwd:       opts.Cwd,
			Sequence:  last,
			Direction: l.Dir,
			Message:   l.Msg,
		}}}
		if err := stream.Send(req); err != nil {
			return sendFailed(l.Number, err)
		}
	}
	if !opts.KeepOpen {
		req := &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: opts.SessionID, Sequence: last + 1}}}
		if err := stream.Send(req); err != nil {
			return sendFailed(int(last+1), err)
		}
	}
	return stream.CloseSend()
}

// sendFailed turns io.EOF from Send (the stream ended; Recv has the real
// status) into a plain note.
func sendFailed(n int, err error) error {
	if errors.Is(err, io.EOF) {
		return nil // the receive side reports why the stream ended
	}
	return fmt.Errorf("sending line %d: %w", n, err)
}
