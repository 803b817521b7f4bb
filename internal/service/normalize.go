package service

import (
	"errors"
	"io"
	"sync/atomic"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// errDraining ends streams when the server shuts down.
var errDraining = status.Error(codes.Unavailable, "acpnormd is shutting down; reconnect to go on where you left off (session state is shared)")

// Normalize implements pb.NormalizerServiceServer. The receive loop runs on
// the handler's goroutine and the send loop on its own, with a bounded queue
// between them: when a client reads slowly the queue fills, the receive loop
// stops reading, and HTTP/2 flow control pushes back on the client instead
// of memory growing here.
func (s *Service) Normalize(stream pb.NormalizerService_NormalizeServer) error {
	out := make(chan *pb.NormalizeResponse, s.cfg.SendQueue)
	sent := make(chan error, 1)
	go func() { sent <- sendLoop(stream, out) }()
	err := s.recvLoop(stream, out)
	close(out)
	if serr := <-sent; err == nil {
		err = serr
	}
	return err
}

// sendLoop sends every queued response. After a failed send it keeps
// draining the queue so the receive loop never blocks on a dead stream.
func sendLoop(stream pb.NormalizerService_NormalizeServer, out <-chan *pb.NormalizeResponse) error {
	var err error
	for r := range out {
		if err == nil {
			err = stream.Send(r)
		}
	}
	return err
}

// recvLoop reads requests, applies them in order and queues what they
// produce. It returns nil when the client closes its side.
func (s *Service) recvLoop(stream pb.NormalizerService_NormalizeServer, out chan<- *pb.NormalizeResponse) error {
	ctx := stream.Context()
	reqs := make(chan *pb.NormalizeRequest)
	done := make(chan error, 1)
	var read atomic.Uint64 // requests taken off the wire
	go func() {
		for {
			req, err := stream.Recv()
			if err != nil {
				done <- err
				return
			}
			read.Add(1)
			select {
			case reqs <- req:
			case <-ctx.Done():
				return
			}
		}
	}()
	var handled uint64
	apply := func(req *pb.NormalizeRequest) error {
		handled++
		err := s.sessions.handle(ctx, req, func(r *pb.NormalizeResponse) error {
			select {
			case out <- r:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		if err != nil {
			return status.FromContextError(err).Err()
		}
		return nil
	}
	for {
		select {
		case req := <-reqs:
			if err := apply(req); err != nil {
				return err
			}
		case err := <-done:
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-s.draining:
			// Finish every request already read off the wire, then stop.
			for handled < read.Load() {
				if err := apply(<-reqs); err != nil {
					return err
				}
			}
			s.log.Info("stream drained for shutdown", "frames", handled)
			return errDraining
		}
	}
}
