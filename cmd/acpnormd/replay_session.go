package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/acpnorm/acpnorm/client"
	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/replay"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// addrList splits --addr's comma-separated addresses.
func addrList(s string) []string {
	var addrs []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	return addrs
}

// playSession plays the recording as one session of the Go session client
// (package client), which moves to the next address when a stream breaks
// and sends again what had no answer, and returns the revisions it folded
// and the FrameErrors, in order, numbered by the recording's lines.
func playSession(ctx context.Context, addrs []string, dial []grpc.DialOption, lines []replay.Line, f *replayFlags, stderr io.Writer) ([]*pb.NormalizeResponse, error) {
	size := 0
	for _, l := range lines {
		size += len(l.Msg)
	}
	c, err := client.New(addrs, client.WithDialOptions(dial...), client.WithSessionLimits(len(lines)+1, size+1))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	// The client numbers the session's requests from its FirstSequence;
	// the output names the recording's lines (and the line after the last
	// for SessionClosed), as before.
	var first uint64 // set before the first Send, so before any callback
	line := func(seq uint64) uint64 {
		if seq < first {
			return seq
		}
		if seq -= first - 1; seq >= 1 && seq <= uint64(len(lines)) {
			return uint64(lines[seq-1].Number)
		}
		if seq == uint64(len(lines))+1 && len(lines) > 0 {
			return uint64(lines[len(lines)-1].Number) + 1
		}
		return seq + first - 1
	}
	var mu sync.Mutex
	var resps []*pb.NormalizeResponse
	s := c.Session(f.session, client.Dialect(f.dialect), client.Cwd(f.cwd),
		client.OnRevision(func(x *pb.ShellExec) {
			x = proto.Clone(x).(*pb.ShellExec)
			x.Sequence = line(x.GetSequence())
			mu.Lock()
			resps = append(resps, &pb.NormalizeResponse{Kind: &pb.NormalizeResponse_ShellExec{ShellExec: x}})
			mu.Unlock()
		}),
		client.OnFrameError(func(fe *pb.FrameError) {
			fe = proto.Clone(fe).(*pb.FrameError)
			fe.Sequence = line(fe.GetSequence())
			mu.Lock()
			resps = append(resps, &pb.NormalizeResponse{Kind: &pb.NormalizeResponse_FrameError{FrameError: fe}})
			mu.Unlock()
		}))
	first = s.FirstSequence()
	for i, l := range lines {
		if err := s.Send(ctx, l.Dir, l.Msg); err != nil {
			return nil, err
		}
		if f.pace > 0 && i < len(lines)-1 {
			t := time.NewTimer(f.pace)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, fmt.Errorf("--timeout ended the replay after %d of %d lines: %w", i+1, len(lines), ctx.Err())
			}
		}
	}
	if f.keepOpen {
		err = s.Flush(ctx)
	} else {
		err = s.Close(ctx)
	}
	if st := s.Stats(); st.Reconnects > 0 || st.Losses > 0 {
		fmt.Fprintf(stderr, "replay: %d stream(s), %d reconnect(s), %d request(s) sent again, %d refused as not applied, %d state loss(es) rebuilt\n",
			st.Streams, st.Reconnects, st.Resent, st.NotApplied, st.Losses)
	}
	if err != nil {
		return nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	return resps, nil
}
