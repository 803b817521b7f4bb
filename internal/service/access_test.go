package service

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/testcerts"
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

// certs writes a fresh set of test certificates (internal/testcerts) into
// a new directory and returns it.
func certs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := testcerts.Write(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// certDER is the first certificate of a PEM file.
func certDER(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s holds no PEM block", path)
	}
	return blk.Bytes
}

// copyFile writes the contents of from to to.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	write(t, to, b)
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
	// one signs the server and the clients; two is the same kind of set
	// from another CA: its server certificate is the renewal.
	one, two := certs(t), certs(t)
	dir := t.TempDir()
	files := TLSFiles{Cert: filepath.Join(dir, "server.pem"), Key: filepath.Join(dir, "server.key"), ClientCA: filepath.Join(one, testcerts.CA)}
	copyFile(t, filepath.Join(one, testcerts.ServerCert), files.Cert)
	copyFile(t, filepath.Join(one, testcerts.ServerKey), files.Key)
	cfg, err := NewTLSConfig(files, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := DefaultServerOptions()
	opts.TLS = cfg
	addr, svc := serveTCP(t, opts)

	roots := x509.NewCertPool()
	for _, d := range []string{one, two} {
		ca, err := x509.ParseCertificate(certDER(t, filepath.Join(d, testcerts.CA)))
		if err != nil {
			t.Fatal(err)
		}
		roots.AddCert(ca)
	}
	// clientWith presents the certificate in certFile, if any.
	clientWith := func(certFile, keyFile string) *tls.Config {
		c := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
		if certFile != "" {
			pair, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				t.Fatal(err)
			}
			c.Certificates = []tls.Certificate{pair}
		}
		return c
	}
	client := clientWith(filepath.Join(one, testcerts.ClientCert), filepath.Join(one, testcerts.ClientKey))
	list := func(c *tls.Config) error {
		conn := connect(t, addr, credentials.NewTLS(c))
		_, err := pb.NewNormalizerServiceClient(conn).ListDialects(callCtx(t), &pb.ListDialectsRequest{})
		return err
	}
	if err := list(client); err != nil {
		t.Fatalf("a client certificate signed by the client CA: %v", err)
	}
	if err := list(clientWith("", "")); status.Code(err) != codes.Unavailable {
		t.Fatalf("no client certificate: %v, want refused (UNAVAILABLE)", err)
	}
	if err := list(clientWith(filepath.Join(one, testcerts.OtherCert), filepath.Join(one, testcerts.OtherKey))); status.Code(err) != codes.Unavailable {
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
	served := func() []byte {
		conn, err := tls.Dial("tcp", addr, client)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Raw
	}
	first, renewed := certDER(t, filepath.Join(one, testcerts.ServerCert)), certDER(t, filepath.Join(two, testcerts.ServerCert))
	if !bytes.Equal(served(), first) {
		t.Fatal("the server does not serve its certificate")
	}
	copyFile(t, filepath.Join(two, testcerts.ServerCert), files.Cert)
	copyFile(t, filepath.Join(two, testcerts.ServerKey), files.Key)
	later := time.Now().Add(time.Minute)
	for _, p := range []string{files.Cert, files.Key} {
		if err := os.Chtimes(p, later, later); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(served(), renewed) {
		t.Fatal("after renewal the old certificate is served, want the new one")
	}
	// A broken file keeps the last good certificate in use.
	write(t, files.Cert, []byte("not a certificate"))
	later = later.Add(time.Minute)
	if err := os.Chtimes(files.Cert, later, later); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(served(), renewed) {
		t.Fatal("after a broken renewal another certificate is served, want the last good one")
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

	// A token of the same length written in place, its modification
	// time put back (cp -p, rsync -t), replaces the old one too.
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // the kernel stamps files by its coarse clock: a tick or more
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("third--token"), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if _, err := client.ListDialects(with("Bearer second-token"), &pb.ListDialectsRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("the token replaced in place, modification time put back: %v", err)
	}
	if _, err := client.ListDialects(with("Bearer third--token"), &pb.ListDialectsRequest{}); err != nil {
		t.Fatalf("the token written in place: %v", err)
	}

	// /metrics takes the same token.
	h := MetricsHandler(ServerOptions{Token: tok}, nil, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	for auth, want := range map[string]int{"": 401, "Bearer nope": 401, "Bearer third--token": 200} {
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
