package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

type healthFlags struct {
	addr, service string
	timeout       time.Duration
	client        clientFlags
}

func healthFlagSet() (*flag.FlagSet, *healthFlags) {
	f := &healthFlags{}
	fs := flag.NewFlagSet("health", flag.ContinueOnError)
	fs.StringVar(&f.addr, "addr", defaultHealthAddr(), "address of the server to ask; follows serve's ACPNORM_LISTEN, reading\n"+
		"an unspecified host such as 0.0.0.0 as loopback")
	fs.StringVar(&f.service, "service", "", "service to ask about; empty means the whole server, ready while its store answers;\n"+
		"liveness is SERVING for as long as the process answers")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Second, "give up after this long")
	f.client.register(fs)
	return fs, f
}

// defaultHealthAddr is where a serve started with the same environment
// listens, as seen from the same host (or container).
func defaultHealthAddr() string {
	listen := envString("ACPNORM_LISTEN", "127.0.0.1:50051")
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	switch ip := net.ParseIP(host); {
	case host == "":
		host = "127.0.0.1"
	case ip != nil && ip.IsUnspecified() && ip.To4() != nil:
		host = "127.0.0.1"
	case ip != nil && ip.IsUnspecified():
		host = "::1"
	}
	return net.JoinHostPort(host, port)
}

func healthCmd(args []string, stdout, _ io.Writer) error {
	fs, f := healthFlagSet()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("health takes no arguments, got %q", fs.Args())
	}
	if f.timeout <= 0 {
		return usagef("--timeout %v: want a duration above 0", f.timeout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	opts, err := f.client.dialOptions()
	if err != nil {
		return err
	}
	st, err := checkHealth(ctx, f.addr, f.service, opts...)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s %s\n", subject(f.addr, f.service), st)
	return nil
}

// checkHealth asks addr's health service about service and returns nil
// only when it is SERVING; otherwise the error says what it is instead.
func checkHealth(ctx context.Context, addr, service string, opts ...grpc.DialOption) (healthpb.HealthCheckResponse_ServingStatus, error) {
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", addr, err)
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service}, grpc.WaitForReady(false))
	if err != nil {
		s := status.Convert(err)
		if s.Code() == codes.NotFound {
			return 0, fmt.Errorf("%s: the server does not know this service (%s)", subject(addr, service), s.Message())
		}
		return 0, fmt.Errorf("%s: no answer (%s): %s", subject(addr, service), s.Code(), s.Message())
	}
	switch st := resp.GetStatus(); st {
	case healthpb.HealthCheckResponse_SERVING:
	case healthpb.HealthCheckResponse_NOT_SERVING:
		return st, fmt.Errorf("%s %s (not ready: it is shutting down, or its store would refuse commits, on a Redis Cluster those of some slots; its log names the masters)", subject(addr, service), st)
	default:
		return st, fmt.Errorf("%s %s", subject(addr, service), st)
	}
	return resp.GetStatus(), nil
}

func subject(addr, service string) string {
	if service == "" {
		return addr
	}
	return addr + " " + service
}
