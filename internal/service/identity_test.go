package service

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/testcerts"
	"github.com/acpnorm/acpnorm/normalize"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	reflectpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
)

// serveWith serves svc with opts on a loopback port (real TCP) and
// returns its address.
func serveWith(t *testing.T, svc *Service, opts ServerOptions) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := NewServer(svc, opts, nil)
	go srv.Serve(lis)
	t.Cleanup(srv.GRPC.Stop)
	return lis.Addr().String()
}

// tcpStream is one Normalize stream over a real connection.
type tcpStream struct {
	t  *testing.T
	st pb.NormalizerService_NormalizeClient
}

func openTCP(t *testing.T, client pb.NormalizerServiceClient, ctx context.Context) *tcpStream {
	t.Helper()
	st, err := client.Normalize(ctx)
	require.NoError(t, err)
	return &tcpStream{t: t, st: st}
}

func (s *tcpStream) send(sid string, seq uint64, msg string) {
	s.t.Helper()
	require.NoError(s.t, s.st.Send(frameReq(sid, seq, msg)))
}

func (s *tcpStream) recv() (*pb.NormalizeResponse, error) { return s.st.Recv() }

func (s *tcpStream) next() *pb.NormalizeResponse {
	s.t.Helper()
	r, err := s.st.Recv()
	require.NoError(s.t, err)
	return r
}

// rest closes the stream's sending side and returns every response left
// on it.
func (s *tcpStream) rest() []*pb.NormalizeResponse {
	s.t.Helper()
	require.NoError(s.t, s.st.CloseSend())
	var out []*pb.NormalizeResponse
	for {
		r, err := s.st.Recv()
		if err != nil {
			return out
		}
		out = append(out, r)
	}
}

// namesNoneOfA checks that responses on B's stream carry neither A's
// output nor A's command (the isolation tests' secret call).
func namesNoneOfA(t *testing.T, rs []*pb.NormalizeResponse) {
	t.Helper()
	require.NotEmpty(t, rs)
	for _, r := range rs {
		text, err := protojson.Marshal(r)
		require.NoError(t, err)
		assert.NotContains(t, string(text), "hunter2", "B's stream carries A's text")
		assert.NotContains(t, string(text), "secrets.env", "B's stream names A's command")
	}
}

// bearer is a context whose calls carry token.
func bearer(t *testing.T, token string) context.Context {
	return metadata.AppendToOutgoingContext(callCtx(t), "authorization", "Bearer "+token)
}

func writeTokens(t *testing.T, path, content string) {
	t.Helper()
	write(t, path, []byte(content))
	// A new modification time even within the file system's resolution.
	later := time.Now().Add(time.Duration(len(content)) * time.Second)
	require.NoError(t, os.Chtimes(path, later, later))
}

// The scenario over TCP with two named tokens: A streams a command
// whose output is a secret; B, which knows A's session and call ids, sends
// a terminal_output delta "." to them and never sees A's text; A's call

// tokensClient serves svc (a new one with the default config when nil)
// on loopback TCP behind a tokens file holding file, with the server's
// default options changed by set (when not nil), and returns a client of
// it.
func tokensClient(t *testing.T, svc *Service, file string, set func(*ServerOptions)) pb.NormalizerServiceClient {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens")
	writeTokens(t, path, file)
	tokens, err := NewTokens(path, nil)
	require.NoError(t, err)
	if svc == nil {
		svc, err = New(DefaultConfig(), nil, nil)
		require.NoError(t, err)
	}
	opts := DefaultServerOptions()
	opts.Tokens = tokens
	if set != nil {
		set(&opts)
	}
	return pb.NewNormalizerServiceClient(connect(t, serveWith(t, svc, opts), insecure.NewCredentials()))
}

// goes on untouched.
func TestNamedTokensKeepSessionsApart(t *testing.T) {
	svc, err := New(DefaultConfig(), nil, nil)
	require.NoError(t, err)
	sum := sha256.Sum256([]byte("bob-secret"))
	client := tokensClient(t, svc, "# team tokens\nalice alice-secret\n\nbob sha256:"+hex.EncodeToString(sum[:])+"\n", nil)

	a := openTCP(t, client, bearer(t, "alice-secret"))
	a.send("S1", 1, openCall("c1", "cat secrets.env"))
	require.Equal(t, uint32(1), a.next().GetShellExec().GetRevision())
	a.send("S1", 2, delta("c1", "AWS_SECRET=hunter2\n"))
	require.Equal(t, "AWS_SECRET=hunter2\n", a.next().GetShellExec().GetOutput().GetText())

	b := openTCP(t, client, bearer(t, "bob-secret"))
	b.send("S1", 1, delta("c1", "."))
	fromB := b.rest()
	namesNoneOfA(t, fromB)
	for _, r := range fromB {
		if x := r.GetShellExec(); x != nil {
			assert.Equal(t, uint32(1), x.GetRevision(), "B's delta opens B's own call")
			assert.Equal(t, ".", x.GetOutput().GetText())
		}
	}

	a.send("S1", 3, delta("c1", "more\n"))
	x := a.next().GetShellExec()
	assert.Equal(t, uint32(3), x.GetRevision())
	assert.Equal(t, "more\n", x.GetOutput().GetText())
	assert.Equal(t, pb.TextMode_TEXT_MODE_APPEND, x.GetOutput().GetMode())
	assert.Equal(t, "cat secrets.env", x.GetCommand())

	// The sessions are two, one per identity.
	stA, ok := svc.sessions.n.Namespace("alice").SessionStats("S1")
	require.True(t, ok)
	stB, ok := svc.sessions.n.Namespace("bob").SessionStats("S1")
	require.True(t, ok)
	assert.Equal(t, 1, stA.Calls)
	assert.Equal(t, 1, stB.Calls)
	_, ok = svc.sessions.n.SessionStats("S1")
	assert.False(t, ok, "the default identity holds no session S1")
}

// mtlsServer serves svc with mutual TLS of the certificates in dir, and
// returns a dial function presenting one of the CA's client certificates.
func mtlsServer(t *testing.T, svc *Service, dir string, names *ClientNames) func(cert, key string) pb.NormalizerServiceClient {
	t.Helper()
	cfg, err := NewTLSConfig(TLSFiles{Cert: filepath.Join(dir, testcerts.ServerCert), Key: filepath.Join(dir, testcerts.ServerKey), ClientCA: filepath.Join(dir, testcerts.CA)}, nil)
	require.NoError(t, err)
	opts := DefaultServerOptions()
	opts.TLS, opts.ClientNames = cfg, names
	addr := serveWith(t, svc, opts)
	roots := x509.NewCertPool()
	ca, err := x509.ParseCertificate(certDER(t, filepath.Join(dir, testcerts.CA)))
	require.NoError(t, err)
	roots.AddCert(ca)
	return func(cert, key string) pb.NormalizerServiceClient {
		pair, err := tls.LoadX509KeyPair(filepath.Join(dir, cert), filepath.Join(dir, key))
		require.NoError(t, err)
		c := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}, ServerName: testcerts.ServerName}
		return pb.NewNormalizerServiceClient(connect(t, addr, credentials.NewTLS(c)))
	}
}

// The same with two client certificates: each is its own identity, named
// by its subject CN or its SPIFFE URI SAN (with the kind: cn:, uri:), or
// by the names a --tls-client-names file maps them to.
func TestClientCertificatesKeepSessionsApart(t *testing.T) {
	dir := certs(t)
	namesFile := filepath.Join(t.TempDir(), "names")
	writeTokens(t, namesFile, "team-a cn:"+testcerts.ClientCN+"\nteam-b uri:"+testcerts.ClientBURI+"\n")
	names, err := NewClientNames(namesFile, nil)
	require.NoError(t, err)
	for _, c := range []struct {
		name       string
		names      *ClientNames
		nsA, nsB   string
		labelOfA   string
		refusedFor string
	}{
		{"certificate identities", nil, "cn:" + testcerts.ClientCN, "uri:" + testcerts.ClientBURI, otherIdentity, ""},
		{"mapped names", names, "team-a", "team-b", "team-a", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Quota.Calls = 1
			svc, err := New(cfg, nil, nil)
			require.NoError(t, err)
			dial := mtlsServer(t, svc, dir, c.names)
			a := openTCP(t, dial(testcerts.ClientCert, testcerts.ClientKey), callCtx(t))
			a.send("S1", 1, openCall("c1", "cat secrets.env"))
			a.next()
			a.send("S1", 2, delta("c1", "AWS_SECRET=hunter2\n"))
			a.next()
			b := openTCP(t, dial(testcerts.ClientBCert, testcerts.ClientBKey), callCtx(t))
			b.send("S1", 1, delta("c1", "."))
			x := b.next().GetShellExec()
			assert.Equal(t, uint32(1), x.GetRevision())
			assert.Equal(t, ".", x.GetOutput().GetText())
			a.send("S1", 3, delta("c1", "more"))
			assert.Equal(t, uint32(3), a.next().GetShellExec().GetRevision())

			_, ok := svc.sessions.n.Namespace(c.nsA).SessionStats("S1")
			assert.True(t, ok, "A's session is in namespace %q", c.nsA)
			_, ok = svc.sessions.n.Namespace(c.nsB).SessionStats("S1")
			assert.True(t, ok, "B's session is in namespace %q", c.nsB)

			// A refusal is counted under A's label: its name when it is
			// configured, "other" for a bare certificate identity.
			a.send("S1", 4, openCall("c2", "true"))
			fe := a.next().GetFrameError()
			require.NotNil(t, fe)
			assert.Contains(t, fe.GetMessage(), "--quota-calls")
			assert.Equal(t, 1.0, testutil.ToFloat64(svc.sessions.m.refusals.WithLabelValues(normalize.LimitQuotaCalls, c.labelOfA)))
		})
	}

	// With a map, a certificate it does not name is refused.
	writeTokens(t, namesFile, "team-b uri:"+testcerts.ClientBURI+"\n")
	svc, err := New(DefaultConfig(), nil, nil)
	require.NoError(t, err)
	dial := mtlsServer(t, svc, dir, names)
	_, err = dial(testcerts.ClientCert, testcerts.ClientKey).ListDialects(callCtx(t), &pb.ListDialectsRequest{})
	assert.Equal(t, codes.PermissionDenied, status.Code(err))
	assert.Contains(t, status.Convert(err).Message(), `"cn:`+testcerts.ClientCN+`"`)
	_, err = dial(testcerts.ClientBCert, testcerts.ClientBKey).ListDialects(callCtx(t), &pb.ListDialectsRequest{})
	assert.NoError(t, err)
}

// A certificate's identity is its URI SAN, else its DNS SAN, else its
// subject CN, each with its kind, so that no two kinds are one identity.
func TestCertIdentity(t *testing.T) {
	spiffe, err := url.Parse("spiffe://example.org/ns/ci/sa/builder")
	require.NoError(t, err)
	for _, c := range []struct {
		cert *x509.Certificate
		want string
	}{
		{&x509.Certificate{URIs: []*url.URL{spiffe}, DNSNames: []string{"b.example.org"}, Subject: pkix.Name{CommonName: "cn"}}, "uri:spiffe://example.org/ns/ci/sa/builder"},
		{&x509.Certificate{DNSNames: []string{"b.example.org", "c.example.org"}, Subject: pkix.Name{CommonName: "cn"}}, "dns:b.example.org"},
		{&x509.Certificate{Subject: pkix.Name{CommonName: "cn"}}, "cn:cn"},
		{&x509.Certificate{Subject: pkix.Name{CommonName: "spiffe://example.org/ns/ci/sa/builder"}}, "cn:spiffe://example.org/ns/ci/sa/builder"},
		{&x509.Certificate{Subject: pkix.Name{CommonName: "default"}}, "cn:default"},
		{&x509.Certificate{DNSNames: []string{""}, Subject: pkix.Name{CommonName: "cn"}}, ""},
		{&x509.Certificate{}, ""},
	} {
		assert.Equal(t, c.want, CertIdentity(c.cert))
	}
}

// Identities of different kinds never collide: a certificate whose
// subject CN is the text of another's URI or DNS SAN (what a CA that lets
// a holder choose its CN signs) is another identity, without a names file
// and with one; and a CN "default" is not the default identity. Through
// the real server, with real certificates: B, holding A's session and
// call ids, sees none of A's text, and B's frames and SessionClosed leave
// A's call as it was.
func TestCertificateIdentityKindsNeverCollide(t *testing.T) {
	dir := certs(t)
	closeReq := func(sid string, seq uint64) *pb.NormalizeRequest {
		return &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: sid, Sequence: seq}}}
	}
	pairs := []struct {
		name           string
		aCert, aKey    string
		bCert, bKey    string
		nsA, nsB       string
		namesOfA       string // a names file line mapping A only
		legacyNamesOfA string // the same, as a file before kinds wrote it ("" when it is refused)
	}{
		{"a CN that is a URI SAN", testcerts.ClientBCert, testcerts.ClientBKey, testcerts.ClientCNURICert, testcerts.ClientCNURIKey,
			"uri:" + testcerts.ClientBURI, "cn:" + testcerts.ClientBURI, "team-a uri:" + testcerts.ClientBURI, "team-a " + testcerts.ClientBURI},
		{"a CN that is a DNS SAN", testcerts.ClientDNSCert, testcerts.ClientDNSKey, testcerts.ClientCNDNSCert, testcerts.ClientCNDNSKey,
			"dns:" + testcerts.ClientDNS, "cn:" + testcerts.ClientDNS, "team-a dns:" + testcerts.ClientDNS, ""},
	}
	for _, c := range pairs {
		t.Run(c.name, func(t *testing.T) {
			svc, err := New(DefaultConfig(), nil, nil)
			require.NoError(t, err)
			dial := mtlsServer(t, svc, dir, nil)
			a := openTCP(t, dial(c.aCert, c.aKey), callCtx(t))
			a.send("S1", 1, openCall("c1", "cat secrets.env"))
			require.Equal(t, uint32(1), a.next().GetShellExec().GetRevision())
			a.send("S1", 2, delta("c1", "AWS_SECRET=hunter2\n"))
			require.Equal(t, uint32(2), a.next().GetShellExec().GetRevision())

			b := openTCP(t, dial(c.bCert, c.bKey), callCtx(t))
			b.send("S1", 1, delta("c1", "."))
			require.NoError(t, b.st.Send(closeReq("S1", 2)))
			fromB := b.rest()
			namesNoneOfA(t, fromB)
			first := fromB[0].GetShellExec()
			require.NotNil(t, first)
			assert.Equal(t, uint32(1), first.GetRevision(), "B's delta opens B's own call")
			assert.Equal(t, ".", first.GetOutput().GetText())

			a.send("S1", 3, delta("c1", "more\n"))
			x := a.next().GetShellExec()
			require.NotNil(t, x, "A's call goes on after B's SessionClosed")
			assert.Equal(t, uint32(3), x.GetRevision())
			assert.Equal(t, "more\n", x.GetOutput().GetText())
			assert.Equal(t, pb.TextMode_TEXT_MODE_APPEND, x.GetOutput().GetMode())
			assert.Equal(t, "cat secrets.env", x.GetCommand())
			assert.Equal(t, pb.ShellState_SHELL_STATE_RUNNING, x.GetState())

			stA, ok := svc.sessions.n.Namespace(c.nsA).SessionStats("S1")
			require.True(t, ok, "A's session is in namespace %q", c.nsA)
			assert.Equal(t, 1, stA.Calls)
			_, ok = svc.sessions.n.Namespace(c.nsB).SessionStats("S1")
			assert.False(t, ok, "B closed its own session, in namespace %q", c.nsB)
		})

		// A names file entry of A's kind names A only: B is refused,
		// naming B's identity with its kind.
		lines := []string{c.namesOfA}
		if c.legacyNamesOfA != "" {
			lines = append(lines, c.legacyNamesOfA)
		}
		for _, line := range lines {
			t.Run(c.name+"/names "+line, func(t *testing.T) {
				namesFile := filepath.Join(t.TempDir(), "names")
				writeTokens(t, namesFile, line+"\n")
				names, err := NewClientNames(namesFile, nil)
				require.NoError(t, err)
				svc, err := New(DefaultConfig(), nil, nil)
				require.NoError(t, err)
				dial := mtlsServer(t, svc, dir, names)
				a := openTCP(t, dial(c.aCert, c.aKey), callCtx(t))
				a.send("S1", 1, openCall("c1", "cat secrets.env"))
				require.Equal(t, uint32(1), a.next().GetShellExec().GetRevision())
				_, ok := svc.sessions.n.Namespace("team-a").SessionStats("S1")
				assert.True(t, ok)

				_, err = dial(c.bCert, c.bKey).ListDialects(callCtx(t), &pb.ListDialectsRequest{})
				assert.Equal(t, codes.PermissionDenied, status.Code(err))
				assert.Contains(t, status.Convert(err).Message(), strconv.Quote(c.nsB))
				b, err := dial(c.bCert, c.bKey).Normalize(callCtx(t))
				require.NoError(t, err)
				if err := b.Send(frameReq("S1", 1, delta("c1", "."))); err != nil {
					require.ErrorIs(t, err, io.EOF, "the stream was refused before the frame went")
				}
				_, err = b.Recv()
				assert.Equal(t, codes.PermissionDenied, status.Code(err))
			})
		}
	}

	// A certificate whose CN is "default" is not the default identity: its
	// frames never reach the default namespace's sessions.
	t.Run("a CN that is the default identity's name", func(t *testing.T) {
		svc, err := New(DefaultConfig(), nil, nil)
		require.NoError(t, err)
		_, err = svc.sessions.n.Feed("S1", []byte(openCall("c1", "cat secrets.env")))
		require.NoError(t, err)
		_, err = svc.sessions.n.Feed("S1", []byte(delta("c1", "AWS_SECRET=hunter2\n")))
		require.NoError(t, err)
		dial := mtlsServer(t, svc, dir, nil)
		b := openTCP(t, dial(testcerts.ClientDefCert, testcerts.ClientDefKey), callCtx(t))
		b.send("S1", 1, delta("c1", "."))
		x := b.next().GetShellExec()
		require.NotNil(t, x)
		assert.Equal(t, uint32(1), x.GetRevision(), "B's delta opens B's own call")
		assert.Equal(t, ".", x.GetOutput().GetText())
		assert.Empty(t, x.GetCommand())
		_, ok := svc.sessions.n.Namespace("cn:default").SessionStats("S1")
		assert.True(t, ok)
		st, ok := svc.sessions.n.SessionStats("S1")
		require.True(t, ok)
		assert.Equal(t, 1, st.Calls)
	})
}

// A names file says each entry's kind (uri:, dns:, cn:); an entry of a
// file written before kinds is read as a URI SAN when it is one (it has
// "://": no DNS name has), and refused, naming it, when it could be a DNS
// SAN or a CN.
func TestClientNamesFileFormat(t *testing.T) {
	for _, c := range []struct {
		name, file string
		err        string
		names      map[string]string // certificate identity -> name
	}{
		{"kinds", "# map\nbuilder uri:spiffe://example.org/ns/ci/sa/builder\n\n  web dns:web.example.org \nops cn:Ops Team, Example\n", "",
			map[string]string{"uri:spiffe://example.org/ns/ci/sa/builder": "builder", "dns:web.example.org": "web", "cn:Ops Team, Example": "ops"}},
		{"kinds as openssl writes them", "builder URI:spiffe://example.org/b\nweb DNS:web.example.org\nops CN:ops\n", "",
			map[string]string{"uri:spiffe://example.org/b": "builder", "dns:web.example.org": "web", "cn:ops": "ops"}},
		{"one text, three kinds, three names", "a uri:spiffe://x/a\nb cn:spiffe://x/a\nc dns:x.example\nd cn:x.example\n", "",
			map[string]string{"uri:spiffe://x/a": "a", "cn:spiffe://x/a": "b", "dns:x.example": "c", "cn:x.example": "d"}},
		{"a URI before kinds", "builder spiffe://example.org/ns/ci/sa/builder\n", "",
			map[string]string{"uri:spiffe://example.org/ns/ci/sa/builder": "builder"}},
		{"a URI written twice", "a spiffe://x/a\na uri:spiffe://x/a\n", "", map[string]string{"uri:spiffe://x/a": "a"}},
		{"a CN that says default", "default cn:default\n", "", map[string]string{"cn:default": "default"}},
		{"empty", "", "", map[string]string{}},
		{"a DNS name before kinds", "team-a team-a.clients.example.org\n", `line 1: "team-a.clients.example.org" does not say which kind of certificate identity it is: write dns:team-a.clients.example.org (a DNS SAN) or cn:team-a.clients.example.org (a subject common name)`, nil},
		{"a CN before kinds", "# x\nteam-a acpnorm test client\n", `line 2: "acpnorm test client" does not say which kind`, nil},
		{"no identity", "team-a\n", "line 1: want NAME KIND:CERTIFICATE-IDENTITY", nil},
		{"a kind and nothing", "team-a cn:\n", `line 1: "cn:" names no certificate identity`, nil},
		{"a DNS SAN that is no DNS name", "team-a dns:x.example/a\n", `line 1: "dns:x.example/a" is not a DNS name`, nil},
		{"a URI whose scheme is a kind, before kinds", "team-a cn://x.example/a\n", `line 1: "cn://x.example/a" could be a URI SAN or a cn: write uri:cn://x.example/a for the URI`, nil},
		{"the same for dns", "team-a dns://x.example/a\n", `"dns://x.example/a" could be a URI SAN or a dns`, nil},
		{"uri: and no scheme", "team-a uri://x.example/a\n", `"uri://x.example/a" is not an absolute URI`, nil},
		{"a URI as a certificate's reads", "a uri:SPIFFE://x/a\n", "", map[string]string{"uri:spiffe://x/a": "a"}},
		{"a URI whose scheme is a kind", "team-a uri:cn://x.example/a\n", "", map[string]string{"uri:cn://x.example/a": "team-a"}},
		{"a URI SAN without a scheme", "team-a uri:x.example\n", `line 1: "uri:x.example" is not an absolute URI`, nil},
		{"bad name", "a/b cn:x\n", `identity name "a/b"`, nil},
		{"one identity, two names", "a uri:spiffe://x/a\nb spiffe://x/a\n", `line 2: "uri:spiffe://x/a" is mapped to "a" and "b"`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseClientNames("names", []byte(c.file))
			if c.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.names, got)
		})
	}
}

// One identity at its quota leaves another's frames applied, and each
// refusal names the quota and counts under its identity.
func TestQuotaLeavesOtherIdentitiesAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	writeTokens(t, path, "alice a-token\nbob b-token\n")
	tokens, err := NewTokens(path, nil)
	require.NoError(t, err)
	cfg := DefaultConfig()
	cfg.Quota = normalize.Quota{Sessions: 2}
	svc, err := New(cfg, nil, nil)
	require.NoError(t, err)
	opts := DefaultServerOptions()
	opts.Tokens, opts.MaxStreamsPerIdentity = tokens, 1
	conn := connect(t, serveWith(t, svc, opts), insecure.NewCredentials())
	client := pb.NewNormalizerServiceClient(conn)

	a := openTCP(t, client, bearer(t, "a-token"))
	for i, sid := range []string{"s1", "s2"} {
		a.send(sid, uint64(i+1), openCall("c1", "true"))
		require.NotNil(t, a.next().GetShellExec())
	}
	a.send("s3", 3, openCall("c1", "true"))
	fe := a.next().GetFrameError()
	require.NotNil(t, fe, "alice's third session is over her quota")
	assert.Equal(t, codes.ResourceExhausted, codes.Code(fe.GetCode()))
	assert.Contains(t, fe.GetMessage(), "--quota-sessions")

	// Alice's second stream is over her stream quota.
	extra, err := client.Normalize(bearer(t, "a-token"))
	require.NoError(t, err)
	_, err = extra.Recv()
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	assert.Contains(t, status.Convert(err).Message(), "--quota-streams")

	// Reflection and health streams count against the process's cap only.
	rs, err := reflectpb.NewServerReflectionClient(conn).ServerReflectionInfo(bearer(t, "a-token"))
	require.NoError(t, err)
	require.NoError(t, rs.Send(&reflectpb.ServerReflectionRequest{MessageRequest: &reflectpb.ServerReflectionRequest_ListServices{}}))
	_, err = rs.Recv()
	assert.NoError(t, err, "alice's reflection stream beside her Normalize stream")

	// Bob's frames and stream are his own.
	b := openTCP(t, client, bearer(t, "b-token"))
	for i, sid := range []string{"s1", "s2"} {
		b.send(sid, uint64(i+1), openCall("c1", "true"))
		x := b.next().GetShellExec()
		require.NotNil(t, x, "bob's session %s", sid)
		assert.Equal(t, uint32(1), x.GetRevision())
	}
	m := svc.sessions.m
	assert.Equal(t, 1.0, testutil.ToFloat64(m.refusals.WithLabelValues(normalize.LimitQuotaSessions, "alice")))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.refusals.WithLabelValues("quota_streams", "alice")))
	assert.Equal(t, 0.0, testutil.ToFloat64(m.refusals.WithLabelValues(normalize.LimitQuotaSessions, "bob")))
}

// A token removed from the file is refused at once for new calls, and a
// stream open with it ends (UNAUTHENTICATED) at its next request, which is
// not applied; other identities' streams go on.
func TestRevokedTokenIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	writeTokens(t, path, "alice a-token\nbob b-token\n")
	tokens, err := NewTokens(path, nil)
	require.NoError(t, err)
	svc, err := New(DefaultConfig(), nil, nil)
	require.NoError(t, err)
	svc.recheck = 20 * time.Millisecond
	opts := DefaultServerOptions()
	opts.Tokens = tokens
	client := pb.NewNormalizerServiceClient(connect(t, serveWith(t, svc, opts), insecure.NewCredentials()))

	a := openTCP(t, client, bearer(t, "a-token"))
	a.send("s", 1, openCall("c1", "sleep 100"))
	require.NotNil(t, a.next().GetShellExec())
	b := openTCP(t, client, bearer(t, "b-token"))
	b.send("s", 1, openCall("c1", "true"))
	require.NotNil(t, b.next().GetShellExec())

	before, ok := svc.sessions.n.Namespace("alice").SessionStats("s")
	require.True(t, ok)
	writeTokens(t, path, "bob b-token\n")
	_, err = client.ListDialects(bearer(t, "a-token"), &pb.ListDialectsRequest{})
	assert.Equal(t, codes.Unauthenticated, status.Code(err), "a new call with the removed token")

	time.Sleep(2 * svc.recheck)
	a.send("s", 2, delta("c1", "after revocation"))
	_, err = a.recv()
	assert.Equal(t, codes.Unauthenticated, status.Code(err))
	assert.Contains(t, status.Convert(err).Message(), "no longer names its identity")
	assert.Equal(t, "1", a.st.Trailer().Get(TrailerRequestsApplied)[0], "the request after the revocation was not applied")
	after, ok := svc.sessions.n.Namespace("alice").SessionStats("s")
	require.True(t, ok)
	assert.Equal(t, before, after, "nothing of the refused delta is held")

	b.send("s", 2, delta("c1", "bob goes on"))
	assert.Equal(t, "bob goes on", b.next().GetShellExec().GetOutput().GetText())
	assert.Equal(t, 1.0, counted(svc.sessions.m, "revoked"))

	// The token back in the file is valid again for new calls.
	writeTokens(t, path, "alice a-token\nbob b-token\n# again\n")
	_, err = client.ListDialects(bearer(t, "a-token"), &pb.ListDialectsRequest{})
	assert.NoError(t, err)
}

// A tokens file is read strictly: a line it cannot use refuses the file,
// naming the line.
func TestTokensFileFormat(t *testing.T) {
	sum := sha256.Sum256([]byte("t2"))
	hashed := "sha256:" + hex.EncodeToString(sum[:])
	for _, c := range []struct {
		name, file string
		err        string
		valid      map[string]string // token -> name
	}{
		{"plain and hashed", "a t1\n# comment\n\n  b " + hashed + "  \n", "", map[string]string{"t1": "a", "t2": "b"}},
		{"two tokens for one name", "a t1\na t2\n", "", map[string]string{"t1": "a", "t2": "a"}},
		{"empty", "", "", map[string]string{}},
		{"one field", "a\n", "line 1: want NAME TOKEN", nil},
		{"three fields", "a t1 x\n", "line 1: want NAME TOKEN", nil},
		{"short hash", "a sha256:abcd\n", "64 hex digits", nil},
		{"bad hex", "a sha256:" + strings.Repeat("z", 64) + "\n", "64 hex digits", nil},
		{"bad name", "a/b t1\n", `identity name "a/b"`, nil},
		{"one token, two names", "a t1\nb t1\n", "line 2: the token of \"b\" is also \"a\"'s", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			set, err := parseTokens("tokens", []byte(c.file))
			if c.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.err)
				return
			}
			require.NoError(t, err)
			for tok, name := range c.valid {
				got, ok := set.lookup(sha256.Sum256([]byte(tok)))
				assert.True(t, ok, tok)
				assert.Equal(t, name, got)
			}
			_, ok := set.lookup(sha256.Sum256([]byte("nope")))
			assert.False(t, ok)
		})
	}
}

// A tokens file with no token would refuse every caller: it is refused at
// start, and a reload that empties it keeps the last good tokens.
func TestEmptyTokensFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	writeTokens(t, path, "# no token yet\n")
	_, err := NewTokens(path, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "holds no token")

	writeTokens(t, path, "alice a-token\n")
	tokens, err := NewTokens(path, nil)
	require.NoError(t, err)
	writeTokens(t, path, "")
	name, ok := tokens.Lookup("a-token")
	assert.True(t, ok, "an emptied tokens file dropped the last good tokens")
	assert.Equal(t, "alice", name)

	// Beside --auth-token-file, which lets callers in, an empty file is
	// fine, and emptying it revokes the named tokens.
	beside, err := NewTokensBeside(path, nil)
	require.NoError(t, err)
	writeTokens(t, path, "alice a-token\n")
	_, ok = beside.Lookup("a-token")
	assert.True(t, ok)
	writeTokens(t, path, "# all revoked\n")
	_, ok = beside.Lookup("a-token")
	assert.False(t, ok, "emptying a tokens file beside a token file kept its tokens")
}

// With --auth-token-file alone, or without authentication, every call is
// the default identity, whose sessions are the engine's default
// namespace (the store keys of before identities).
func TestSingleTokenIsTheDefaultIdentity(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token")
	write(t, path, []byte("only-token\n"))
	tok, err := NewToken(path, nil)
	require.NoError(t, err)
	for name, opts := range map[string]ServerOptions{
		"token": func() ServerOptions { o := DefaultServerOptions(); o.Token = tok; return o }(),
		"none":  DefaultServerOptions(),
	} {
		t.Run(name, func(t *testing.T) {
			svc, err := New(DefaultConfig(), nil, nil)
			require.NoError(t, err)
			client := pb.NewNormalizerServiceClient(connect(t, serveWith(t, svc, opts), insecure.NewCredentials()))
			s := openTCP(t, client, bearer(t, "only-token"))
			s.send("S1", 1, openCall("c1", "true"))
			require.NotNil(t, s.next().GetShellExec())
			_, ok := svc.sessions.n.SessionStats("S1")
			assert.True(t, ok)
		})
	}
}

// /metrics names identities and counts each one's refusals, so with
// several identities only those --metrics-identities names may read it;
// the others get 403, a missing or unknown credential 401.
func TestMetricsOnlyForTheirReaders(t *testing.T) {
	page := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "acpnorm_limit_refusals_total") })
	path := filepath.Join(t.TempDir(), "tokens")
	writeTokens(t, path, "alice alice-secret\nscraper scraper-secret\n")
	tokens, err := NewTokens(path, nil)
	require.NoError(t, err)
	namesFile := filepath.Join(t.TempDir(), "names")
	writeTokens(t, namesFile, "scraper cn:prometheus.example.org\nteam-a cn:team-a.example.org\n")
	names, err := NewClientNames(namesFile, nil)
	require.NoError(t, err)
	clientCAs := &tls.Config{ClientCAs: x509.NewCertPool()}
	cert := func(cn string) *tls.ConnectionState {
		return &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{{Subject: pkix.Name{CommonName: cn}}}}}
	}
	for _, c := range []struct {
		name    string
		opts    ServerOptions
		readers []string
		auth    string
		tls     *tls.ConnectionState
		want    int
		says    string
	}{
		{"no authentication", ServerOptions{}, nil, "", nil, 200, ""},
		{"a reader's token", ServerOptions{Tokens: tokens}, []string{"scraper"}, "Bearer scraper-secret", nil, 200, ""},
		{"another identity's token", ServerOptions{Tokens: tokens}, []string{"scraper"}, "Bearer alice-secret", nil, 403, `"alice" may not read /metrics`},
		{"the default readers", ServerOptions{Tokens: tokens}, []string{"metrics"}, "Bearer scraper-secret", nil, 403, "--metrics-identities"},
		{"no token", ServerOptions{Tokens: tokens}, []string{"scraper"}, "", nil, 401, "Authorization: Bearer"},
		{"an unknown token", ServerOptions{Tokens: tokens}, []string{"scraper"}, "Bearer nope", nil, 401, "not one this acpnormd was given"},
		{"a reader's certificate", ServerOptions{TLS: clientCAs}, []string{"cn:prometheus.example.org"}, "", cert("prometheus.example.org"), 200, ""},
		{"a reader of another kind", ServerOptions{TLS: clientCAs}, []string{"dns:prometheus.example.org"}, "", cert("prometheus.example.org"), 403, `"cn:prometheus.example.org" may not`},
		{"another certificate", ServerOptions{TLS: clientCAs}, []string{"cn:prometheus.example.org"}, "", cert("team-a.example.org"), 403, `"cn:team-a.example.org" may not`},
		{"no certificate", ServerOptions{TLS: clientCAs}, []string{"cn:prometheus.example.org"}, "", nil, 401, "client certificate"},
		{"a mapped reader", ServerOptions{TLS: clientCAs, ClientNames: names}, []string{"scraper"}, "", cert("prometheus.example.org"), 200, ""},
		{"a mapped tenant", ServerOptions{TLS: clientCAs, ClientNames: names}, []string{"scraper"}, "", cert("team-a.example.org"), 403, `"team-a" may not`},
		{"an unmapped certificate", ServerOptions{TLS: clientCAs, ClientNames: names}, []string{"scraper"}, "", cert("x.example.org"), 403, "--tls-client-names"},
		{"a reader's text as another kind", ServerOptions{TLS: clientCAs, ClientNames: names}, []string{"scraper"}, "", &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{{DNSNames: []string{"prometheus.example.org"}}}}}, 403, `"dns:prometheus.example.org" is not in`},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/metrics", nil)
			if c.auth != "" {
				req.Header.Set("Authorization", c.auth)
			}
			req.TLS = c.tls
			rec := httptest.NewRecorder()
			MetricsHandler(c.opts, c.readers, page).ServeHTTP(rec, req)
			assert.Equal(t, c.want, rec.Code)
			if c.want == 200 {
				assert.Contains(t, rec.Body.String(), "acpnorm_limit_refusals_total")
			} else {
				assert.NotContains(t, rec.Body.String(), "acpnorm_limit_refusals_total")
				assert.Contains(t, rec.Body.String(), c.says)
			}
		})
	}
}
