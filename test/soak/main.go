// Command soak drives mixed load against a running acpnormd on loopback
// for a fixed time and then stops: test/soak.sh runs it and samples the
// daemon meanwhile.
//
// Each worker loops until the time is up: it opens a Normalize stream,
// plays one recording under a new session id and then, in turn, closes the
// session, leaves it open (the TTL must reclaim it), cancels the stream
// mid-recording (a client that goes away), reconnects mid-call, or sends
// frames that are refused. A run fails when a stream ends with an
// unexpected error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/replay"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:50051", "acpnormd address (loopback)")
	dir := flag.String("recordings", "test/testdata/recordings", "directory of recordings")
	workers := flag.Int("workers", 8, "concurrent clients")
	duration := flag.Duration("duration", 10*time.Minute, "how long to load")
	flag.Parse()
	if err := run(*addr, *dir, *workers, *duration); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

func run(addr, dir string, workers int, duration time.Duration) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.ndjson"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no recordings in %s", dir)
	}
	var recs [][]replay.Line
	for _, f := range files {
		lines, err := replay.ReadFile(f)
		if err != nil {
			return err
		}
		recs = append(recs, lines)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	client := pb.NewNormalizerServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	var plays, failures atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				lines := recs[(w+i)%len(recs)]
				sid := fmt.Sprintf("soak-%d-%d", w, i)
				if err := once1(ctx, client, sid, lines, i%5); err != nil && ctx.Err() == nil {
					failures.Add(1)
					once.Do(func() { firstErr = fmt.Errorf("%s (mode %d): %w", sid, i%5, err) })
				}
				plays.Add(1)
			}
		}()
	}
	wg.Wait()
	fmt.Printf("soak: %d plays by %d workers in %v, %d failed\n", plays.Load(), workers, duration, failures.Load())
	return firstErr
}

// once1 plays one recording in the given mode: 0 closes the session, 1
// leaves it open, 2 cancels the stream half-way, 3 reconnects half-way,
// 4 also sends refused frames.
func once1(ctx context.Context, c pb.NormalizerServiceClient, sid string, lines []replay.Line, mode int) error {
	half := len(lines) / 2
	switch mode {
	case 0:
		return play(ctx, c, sid, lines, false, -1)
	case 1:
		return play(ctx, c, sid, lines, true, -1)
	case 2:
		return play(ctx, c, sid, lines, true, half)
	case 3:
		if err := play(ctx, c, sid, lines[:half], true, -1); err != nil {
			return err
		}
		return play(ctx, c, sid, lines[half:], false, -1)
	default:
		bad := []replay.Line{{Number: 1, Msg: []byte("{not json")}, {Number: 2, Msg: []byte(`{"jsonrpc":"2.0","method":"session/update","params":{}}`)}}
		if err := play(ctx, c, sid, append(bad, lines...), false, -1); err != nil {
			return err
		}
		return nil
	}
}

// play streams lines; with cancelAt >= 0 it cancels the stream after that
// many lines without waiting for the answers.
func play(ctx context.Context, c pb.NormalizerServiceClient, sid string, lines []replay.Line, keepOpen bool, cancelAt int) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := c.Normalize(sctx)
	if err != nil {
		return err
	}
	recvd := make(chan error, 1)
	go func() {
		for {
			if _, err := st.Recv(); err != nil {
				recvd <- err
				return
			}
		}
	}()
	for i, l := range lines {
		if i == cancelAt {
			cancel()
			<-recvd
			return nil
		}
		req := &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: sid, Dialect: "auto", Sequence: uint64(l.Number), Direction: l.Dir, Message: l.Msg}}}
		if err := st.Send(req); err != nil {
			break // Recv has the reason
		}
	}
	if !keepOpen {
		_ = st.Send(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: sid}}})
	}
	_ = st.CloseSend()
	err = <-recvd
	if errors.Is(err, io.EOF) || status.Code(err) == codes.Canceled && ctx.Err() != nil {
		return nil
	}
	return err
}
