package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// testPKI is a CA with a certificate for 127.0.0.1 and one for a client,
// written as PEM files into a temporary directory.
type testPKI struct {
	dir                           string
	caFile, serverCert, serverKey string
	clientCert, clientKey         string
	pool                          *x509.CertPool
	serverPair                    tls.Certificate
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	p := &testPKI{dir: t.TempDir()}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "acpnorm test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	p.pool = x509.NewCertPool()
	p.pool.AddCert(ca)
	p.caFile = p.write(t, "ca.pem", "CERTIFICATE", caDER)
	leaf := func(name string, serial int64, usage x509.ExtKeyUsage, ips []net.IP) (certFile, keyFile string) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return p.write(t, name+".pem", "CERTIFICATE", der), p.write(t, name+"-key.pem", "EC PRIVATE KEY", keyDER)
	}
	p.serverCert, p.serverKey = leaf("server", 2, x509.ExtKeyUsageServerAuth, []net.IP{net.IPv4(127, 0, 0, 1)})
	p.clientCert, p.clientKey = leaf("client", 3, x509.ExtKeyUsageClientAuth, nil)
	p.serverPair, err = tls.LoadX509KeyPair(p.serverCert, p.serverKey)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *testPKI) write(t *testing.T, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// serveHealthTLS serves a SERVING health service over TLS on loopback,
// requiring a client certificate when mutual and the bearer token when
// token is not empty. It returns the address.
func serveHealthTLS(t *testing.T, p *testPKI, mutual bool, token string) string {
	t.Helper()
	cfg := &tls.Config{Certificates: []tls.Certificate{p.serverPair}, MinVersion: tls.VersionTLS12}
	if mutual {
		cfg.ClientAuth, cfg.ClientCAs = tls.RequireAndVerifyClientCert, p.pool
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
	p := newTestPKI(t)
	tokenFile := filepath.Join(p.dir, "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := serveHealthTLS(t, p, false, "s3cret")
	code, out, errOut := runCLI("health", "--addr", addr, "--ca-file", p.caFile, "--token-file", tokenFile)
	if code != 0 || out != addr+" SERVING\n" {
		t.Errorf("TLS and token: exit %d, %q %q", code, out, errOut)
	}
	code, _, errOut = runCLI("health", "--addr", addr, "--ca-file", p.caFile)
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
	p := newTestPKI(t)
	addr := serveHealthTLS(t, p, true, "")
	code, out, errOut := runCLI("health", "--addr", addr, "--ca-file", p.caFile, "--cert-file", p.clientCert, "--key-file", p.clientKey)
	if code != 0 || out != addr+" SERVING\n" {
		t.Errorf("mutual TLS: exit %d, %q %q", code, out, errOut)
	}
	code, _, errOut = runCLI("health", "--addr", addr, "--ca-file", p.caFile)
	if code != exitFail {
		t.Errorf("no client certificate: exit %d, %q", code, errOut)
	}
	code, _, errOut = runCLI("health", "--addr", addr, "--ca-file", p.caFile, "--cert-file", p.clientCert)
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
