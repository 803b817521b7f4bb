package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/internal/testcerts"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// certs writes fresh test certificates and returns their directory.
func certs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := testcerts.Write(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

func in(dir, name string) string { return filepath.Join(dir, name) }

// serveHealthTLS serves a SERVING health service over TLS on loopback with
// the certificates in dir, requiring a client certificate when mutual and
// the bearer token when token is not empty. It returns the address.
func serveHealthTLS(t *testing.T, dir string, mutual bool, token string) string {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(in(dir, testcerts.ServerCert), in(dir, testcerts.ServerKey))
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	if mutual {
		caPEM, err := os.ReadFile(in(dir, testcerts.CA))
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(caPEM)
		cfg.ClientAuth, cfg.ClientCAs = tls.RequireAndVerifyClientCert, pool
	}
	opts := []grpc.ServerOption{grpc.Creds(credentials.NewTLS(cfg))}
	if token != "" {
		opts = append(opts, grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			md, _ := metadata.FromIncomingContext(ctx)
			if got := md.Get("authorization"); len(got) != 1 || got[0] != "Bearer "+token {
				return nil, status.Error(codes.Unauthenticated, "missing or wrong bearer token")
			}
			return h(ctx, req)
		}))
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(opts...)
	h := health.NewServer()
	h.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(g, h)
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	return lis.Addr().String()
}

func TestHealthOverTLSWithToken(t *testing.T) {
	dir := certs(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := serveHealthTLS(t, dir, false, "s3cret")
	code, out, errOut := runCLI("health", "--addr", addr, "--ca-file", in(dir, testcerts.CA), "--token-file", tokenFile)
	if code != 0 || out != addr+" SERVING\n" {
		t.Errorf("TLS and token: exit %d, %q %q", code, out, errOut)
	}
	code, _, errOut = runCLI("health", "--addr", addr, "--ca-file", in(dir, testcerts.CA))
	if code != exitFail || !strings.Contains(errOut, "Unauthenticated") {
		t.Errorf("no token: exit %d, %q", code, errOut)
	}
	code, _, errOut = runCLI("health", "--addr", addr, "--token-file", tokenFile)
	if code != exitFail || !strings.Contains(errOut, "no answer (Unavailable)") {
		t.Errorf("plaintext to a TLS server: exit %d, %q", code, errOut)
	}
	code, _, errOut = runCLI("health", "--addr", addr, "--tls", "--token-file", tokenFile)
	if code != exitFail || !strings.Contains(errOut, "certificate") {
		t.Errorf("a CA the system does not trust: exit %d, %q", code, errOut)
	}
}

func TestHealthOverMutualTLS(t *testing.T) {
	dir := certs(t)
	addr := serveHealthTLS(t, dir, true, "")
	code, out, errOut := runCLI("health", "--addr", addr, "--ca-file", in(dir, testcerts.CA), "--cert-file", in(dir, testcerts.ClientCert), "--key-file", in(dir, testcerts.ClientKey))
	if code != 0 || out != addr+" SERVING\n" {
		t.Errorf("mutual TLS: exit %d, %q %q", code, out, errOut)
	}
	code, _, errOut = runCLI("health", "--addr", addr, "--ca-file", in(dir, testcerts.CA))
	if code != exitFail {
		t.Errorf("no client certificate: exit %d, %q", code, errOut)
	}
	code, _, errOut = runCLI("health", "--addr", addr, "--ca-file", in(dir, testcerts.CA), "--cert-file", in(dir, testcerts.ClientCert))
	if code != exitUsage || !strings.Contains(errOut, "--cert-file and --key-file go together") {
		t.Errorf("certificate without key: exit %d, %q", code, errOut)
	}
}

func TestReplayAccessFlagsNeedAddr(t *testing.T) {
	code, _, errOut := runCLI("replay", "--tls")
	if code != exitUsage || !strings.Contains(errOut, "for a server named by --addr") {
		t.Errorf("exit %d, %q", code, errOut)
	}
}
