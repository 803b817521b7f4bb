package load

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// Server is a server process under test, on a loopback port.
type Server struct {
	Name string
	Addr string
	cmd  *exec.Cmd
}

// PID is the server's process id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// FreeAddr returns a loopback address nothing listens on right now.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Start runs bin with args plus the flag that makes it listen (listenFlag
// followed by a free loopback address) and waits until it answers
// ListDialects (a server that does not implement it answers too).
func Start(ctx context.Context, name, bin, listenFlag string, args ...string) (*Server, error) {
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, append(args, listenFlag, addr)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	s := &Server{Name: name, Addr: addr, cmd: cmd}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		s.Stop()
		return nil, err
	}
	defer conn.Close()
	c := pb.NewNormalizerServiceClient(conn)
	limit := time.Now().Add(20 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		// Any answer, even Unimplemented, says the server is up.
		_, err := c.ListDialects(cctx, &pb.ListDialectsRequest{}, grpc.WaitForReady(false))
		cancel()
		if err == nil || !isUnavailable(err) {
			return s, nil
		}
		if time.Now().After(limit) || ctx.Err() != nil {
			s.Stop()
			return nil, fmt.Errorf("%s did not answer on %s within 20s: %v", name, addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func isUnavailable(err error) bool { return status.Code(err) == codes.Unavailable }

// Stop ends the server with SIGTERM, then SIGKILL after 10 s.
func (s *Server) Stop() {
	if s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}
