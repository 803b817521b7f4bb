package service

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
)

// pki is a certificate authority made at test time.
type pki struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

var serial int64 = 1

func newCA(t *testing.T, name string) *pki {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial++
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serial),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &pki{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a PEM certificate and key signed by the CA, for a server
// (on 127.0.0.1) or a client.
func (ca *pki) issue(t *testing.T, name string, server bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// serveTCP serves opts on a loopback port and returns its address.
func serveTCP(t *testing.T, opts ServerOptions) (string, *Service) {
	t.Helper()
	svc, err := New(DefaultConfig(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(svc, opts, nil)
	go srv.Serve(lis)
	t.Cleanup(srv.GRPC.Stop)
	return lis.Addr().String(), svc
}

func connect(t *testing.T, addr string, creds credentials.TransportCredentials) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca, other := newCA(t, "acpnorm test CA"), newCA(t, "some other CA")
	files := TLSFiles{Cert: filepath.Join(dir, "server.pem"), Key: filepath.Join(dir, "server.key"), ClientCA: filepath.Join(dir, "ca.pem")}
	cert, key := ca.issue(t, "server one", true)
	write(t, files.Cert, cert)
	write(t, files.Key, key)
	write(t, files.ClientCA, ca.pem)
	cfg, err := NewTLSConfig(files, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := DefaultServerOptions()
	opts.TLS = cfg
	addr, svc := serveTCP(t, opts)

	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	clientWith := func(signer *pki) *tls.Config {
		c := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
		if signer != nil {
			certPEM, keyPEM := signer.issue(t, "client", false)
			pair, err := tls.X509KeyPair(certPEM, keyPEM)
			if err != nil {
				t.Fatal(err)
			}
			c.Certificates = []tls.Certificate{pair}
		}
		return c
	}
	list := func(c *tls.Config) error {
		conn := connect(t, addr, credentials.NewTLS(c))
		_, err := pb.NewNormalizerServiceClient(conn).ListDialects(callCtx(t), &pb.ListDialectsRequest{})
		return err
	}
	if err := list(clientWith(ca)); err != nil {
		t.Fatalf("a client certificate signed by the client CA: %v", err)
	}
	if err := list(clientWith(nil)); status.Code(err) != codes.Unavailable {
		t.Fatalf("no client certificate: %v, want refused (UNAVAILABLE)", err)
	}
	if err := list(clientWith(other)); status.Code(err) != codes.Unavailable {
		t.Fatalf("a client certificate of another CA: %v, want refused (UNAVAILABLE)", err)
	}
	if err := list(&tls.Config{InsecureSkipVerify: true}); err == nil { // #nosec: checks the server side
		t.Fatal("a plaintext-trusting client without certificate got through")
	}
	if _, err := pb.NewNormalizerServiceClient(connect(t, addr, insecure.NewCredentials())).ListDialects(callCtx(t), &pb.ListDialectsRequest{}); err == nil {
		t.Fatal("a plaintext client got through a TLS server")
	}
	// The server may finish its side of a failed handshake after the
	// client gave up.
	waitFor(t, "3 failed TLS handshakes to be counted", func() bool { return counted(svc.sessions.m, "tls_handshake") >= 3 })

	// A renewed certificate is served to new connections without a
	// restart.
	served := func() string {
		c := clientWith(ca)
		conn, err := tls.Dial("tcp", addr, c)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if got := served(); got != "server one" {
		t.Fatalf("served %q", got)
	}
	cert, key = ca.issue(t, "server two", true)
	write(t, files.Cert, cert)
	write(t, files.Key, key)
	later := time.Now().Add(time.Minute)
	for _, p := range []string{files.Cert, files.Key} {
		if err := os.Chtimes(p, later, later); err != nil {
			t.Fatal(err)
		}
	}
	if got := served(); got != "server two" {
		t.Fatalf("after renewal served %q, want the new certificate", got)
	}
	// A broken file keeps the last good certificate in use.
	write(t, files.Cert, []byte("not a certificate"))
	later = later.Add(time.Minute)
	if err := os.Chtimes(files.Cert, later, later); err != nil {
		t.Fatal(err)
	}
	if got := served(); got != "server two" {
		t.Fatalf("after a broken renewal served %q, want the last good one", got)
	}
}

func TestBearerToken(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "token")
	write(t, path, []byte("s3cret-token\n"))
	tok, err := NewToken(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := DefaultServerOptions()
	opts.Token = tok
	addr, svc := serveTCP(t, opts)
	conn := connect(t, addr, insecure.NewCredentials())
	client := pb.NewNormalizerServiceClient(conn)
	with := func(v string) context.Context {
		ctx := callCtx(t)
		if v == "" {
			return ctx
		}
		return metadata.AppendToOutgoingContext(ctx, "authorization", v)
	}
	for _, bad := range []string{"", "Bearer wrong", "Bearer s3cret-toke", "Basic s3cret-token", "s3cret-token"} {
		if _, err := client.ListDialects(with(bad), &pb.ListDialectsRequest{}); status.Code(err) != codes.Unauthenticated {
			t.Errorf("unary with authorization %q: %v, want UNAUTHENTICATED", bad, err)
		}
		st, err := client.Normalize(with(bad))
		if err == nil {
			_, err = st.Recv()
		}
		if status.Code(err) != codes.Unauthenticated {
			t.Errorf("stream with authorization %q: %v, want UNAUTHENTICATED", bad, err)
		}
	}
	if _, err := client.ListDialects(with("Bearer s3cret-token"), &pb.ListDialectsRequest{}); err != nil {
		t.Fatalf("the right token: %v", err)
	}
	if _, err := client.ListDialects(with("bearer s3cret-token"), &pb.ListDialectsRequest{}); err != nil {
		t.Fatalf("the scheme is case-insensitive: %v", err)
	}
	st, err := client.Normalize(with("Bearer s3cret-token"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(frameReq("s", 1, openCall("c1", "true"))); err != nil {
		t.Fatal(err)
	}
	if r, err := st.Recv(); err != nil || r.GetShellExec() == nil {
		t.Fatalf("stream with the right token: %v %v", r, err)
	}
	st.CloseSend()
	// Health answers without a token (for probes); reflection does not.
	if r, err := healthpb.NewHealthClient(conn).Check(callCtx(t), &healthpb.HealthCheckRequest{}); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health without a token: %v %v", r, err)
	}
	rs, err := reflectpb.NewServerReflectionClient(conn).ServerReflectionInfo(callCtx(t))
	if err == nil {
		_ = rs.Send(&reflectpb.ServerReflectionRequest{MessageRequest: &reflectpb.ServerReflectionRequest_ListServices{}})
		_, err = rs.Recv()
	}
	if status.Code(err) != codes.Unauthenticated {
		t.Fatalf("reflection without a token: %v, want UNAUTHENTICATED", err)
	}
	if n := counted(svc.sessions.m, "unauthenticated"); n < 10 {
		t.Fatalf("%v unauthenticated refusals counted, want at least 10", n)
	}

	// A new token in the file replaces the old one.
	write(t, path, []byte("second-token"))
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	if _, err := client.ListDialects(with("Bearer s3cret-token"), &pb.ListDialectsRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("the replaced token: %v", err)
	}
	if _, err := client.ListDialects(with("Bearer second-token"), &pb.ListDialectsRequest{}); err != nil {
		t.Fatalf("the new token: %v", err)
	}

	// /metrics takes the same token.
	h := BearerHandler(tok, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	for auth, want := range map[string]int{"": 401, "Bearer nope": 401, "Bearer second-token": 200} {
		req := httptest.NewRequest("GET", "/metrics", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("/metrics with %q: %d, want %d", auth, rec.Code, want)
		}
	}
}

func TestEmptyTokenFileIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token")
	write(t, path, []byte(" \n"))
	if _, err := NewToken(path, nil); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("empty token file: %v", err)
	}
}

// counted reads acpnorm_stream_refusals_total{reason}.
func counted(m *Metrics, reason string) float64 {
	var out dto.Metric
	if err := m.streamRefusals.WithLabelValues(reason).Write(&out); err != nil {
		return -1
	}
	return out.GetCounter().GetValue()
}
