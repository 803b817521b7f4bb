package service

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/auth"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// Every call has an identity, and the session state of one identity is
// kept apart from every other's (its sessions are a namespace of the
// normalize engine, see normalize.Normalizer.Namespace). Who a call is:
//
//   - with bearer tokens (--auth-token-file, --auth-tokens-file), the name
//     of the token it carries; --auth-token-file's token is the identity
//     DefaultIdentity;
//   - else with mutual TLS (--tls-client-ca), the identity of its client
//     certificate (see CertIdentity), or the name --tls-client-names maps
//     it to;
//   - else, with no authentication, DefaultIdentity: every client is one
//     anonymous identity, as before identities existed.
//
// DefaultIdentity's sessions are the engine's default namespace, whose
// keys in a store are the session ids as they were before identities: a
// deployment with one token or none keeps the sessions it stored.

// DefaultIdentity is the identity of --auth-token-file's token and of
// every client when there is no authentication.
const DefaultIdentity = "default"

// otherIdentity is the metrics label of an identity that is not
// configured by name (a certificate identity that no --tls-client-names
// entry maps), so that the label's values stay bounded.
const otherIdentity = "other"

// maxNameBytes bounds an identity name; maxCertIdentityBytes the identity
// of a client certificate (which, unmapped, is the name).
const (
	maxNameBytes         = 128
	maxCertIdentityBytes = 1024
)

// validName is what an identity name may be: the names of tokens files
// and certificate maps, which are also metrics label values.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]*$`)

// identity is who a call comes from.
type identity struct {
	name string
	// still reports whether what the call authenticated with still names
	// this identity (a token removed from its file does not); nil: it
	// cannot be revoked.
	still func() bool
}

// namespace is the identity's namespace in the engine.
func (id identity) namespace() string {
	if id.name == DefaultIdentity {
		return ""
	}
	return id.name
}

type identityKey struct{}

func withIdentity(ctx context.Context, id identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// identityOf is the identity the access interceptor found for the call
// (DefaultIdentity when none ran, as in tests that serve a Service
// without a Server).
func identityOf(ctx context.Context) identity {
	if id, ok := ctx.Value(identityKey{}).(identity); ok {
		return id
	}
	return identity{name: DefaultIdentity}
}

// Tokens are named bearer tokens read from a file (--auth-tokens-file),
// read again when the file changes. Each line is
//
//	NAME TOKEN
//	NAME sha256:HEX
//
// where HEX is the SHA-256 of the token in hex, so that the file need not
// hold the secret; blank lines and lines starting with # are ignored.
// Several lines may give one name several tokens (to rotate one), but no
// token may name two identities. A name is letters, digits and . _ @ -,
// starting with a letter or digit, at most 128 bytes. A file with no token
// is refused unless another credential lets callers in (NewTokensBeside).
// A file that does not read keeps the last good version in use
// (and is logged).
type Tokens struct {
	w *watched[*tokenSet]
}

type tokenSet struct {
	names  []string   // one per hash
	hashes [][32]byte // SHA-256 of each token
	known  map[string]bool
}

// NewTokens reads a tokens file; one that holds no token (every caller
// would be refused) is an error at start, and on reload keeps the last
// good version.
func NewTokens(path string, log *slog.Logger) (*Tokens, error) {
	return newTokens(path, false, log)
}

// NewTokensBeside reads a tokens file used beside another credential
// (--auth-token-file), which lets callers in: a file with no token is
// accepted then, and emptying it revokes every named token.
func NewTokensBeside(path string, log *slog.Logger) (*Tokens, error) {
	return newTokens(path, true, log)
}

func newTokens(path string, empty bool, log *slog.Logger) (*Tokens, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w, err := newWatched("auth tokens", []string{path}, func() (*tokenSet, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("auth tokens: %w", err)
		}
		set, err := parseTokens(path, b)
		if err == nil && !empty && len(set.hashes) == 0 {
			// Every call would be refused: at start that is a mistake,
			// and on reload more likely a file caught half-written.
			return nil, fmt.Errorf("auth tokens file %s holds no token (want NAME TOKEN or NAME sha256:HEX lines); with no --auth-token-file beside it every caller would be refused", path)
		}
		return set, err
	}, log)
	if err != nil {
		return nil, err
	}
	return &Tokens{w: w}, nil
}

func parseTokens(path string, b []byte) (*tokenSet, error) {
	set := &tokenSet{known: map[string]bool{}}
	owner := map[[32]byte]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf("auth tokens file %s, line %d: want NAME TOKEN or NAME sha256:HEX, got %d fields", path, n, len(fields))
		}
		name, tok := fields[0], fields[1]
		if err := checkName(name); err != nil {
			return nil, fmt.Errorf("auth tokens file %s, line %d: %w", path, n, err)
		}
		var h [32]byte
		if hx, ok := strings.CutPrefix(tok, "sha256:"); ok {
			raw, err := hex.DecodeString(hx)
			if err != nil || len(raw) != len(h) {
				return nil, fmt.Errorf("auth tokens file %s, line %d: sha256: wants 64 hex digits (the SHA-256 of the token)", path, n)
			}
			copy(h[:], raw)
		} else {
			h = sha256.Sum256([]byte(tok))
		}
		if other, dup := owner[h]; dup && other != name {
			return nil, fmt.Errorf("auth tokens file %s, line %d: the token of %q is also %q's; a token names one identity", path, n, name, other)
		}
		owner[h] = name
		set.names, set.hashes = append(set.names, name), append(set.hashes, h)
		set.known[name] = true
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("auth tokens file %s: %w", path, err)
	}
	return set, nil
}

func checkName(name string) error {
	if len(name) > maxNameBytes || !validName.MatchString(name) {
		return fmt.Errorf("identity name %q is not letters, digits and . _ @ - (starting with a letter or digit, at most %d bytes)", name, maxNameBytes)
	}
	return nil
}

// lookup returns the name of the token whose hash is h. Every entry is
// compared, in constant time, so the time taken says nothing of which
// matched or how far.
func (s *tokenSet) lookup(h [32]byte) (string, bool) {
	found := -1
	for i := range s.hashes {
		if subtle.ConstantTimeCompare(s.hashes[i][:], h[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return "", false
	}
	return s.names[found], true
}

// Lookup returns the identity token names, and false when the file holds
// no such token.
func (t *Tokens) Lookup(token string) (string, bool) {
	return t.w.get().lookup(sha256.Sum256([]byte(token)))
}

// Valid reports whether token is one of the file's.
func (t *Tokens) Valid(token string) bool {
	_, ok := t.Lookup(token)
	return ok
}

// ClientNames map the identities of client certificates (see
// CertIdentity) to names (--tls-client-names), read from a file and read
// again when it changes. Each line is
//
//	NAME KIND:CERTIFICATE-IDENTITY
//
// where KIND is uri (a URI SAN), dns (a DNS SAN) or cn (the subject's
// common name), in either case, e.g. "ops cn:Ops Team" or
//
//	team-a uri:spiffe://example.org/ns/ci/sa/team-a
//
// the name, then the rest of the line (a common name may hold spaces);
// blank lines and lines starting with # are ignored. The kind is part of
// the identity, so that a certificate whose CN is the text of another's
// SAN is never taken for it. A line without a kind, as files were written
// before kinds, is read as a URI SAN when it holds "://" (no DNS name
// does, and a CN that does is what a holder chooses); any other is
// refused, naming it, since it could be a DNS SAN or a CN. Several
// certificate identities may have one name. With a map, a client whose
// certificate identity it does not hold is refused (PERMISSION_DENIED).
type ClientNames struct {
	w *watched[map[string]string]
}

// NewClientNames reads a certificate name map.
func NewClientNames(path string, log *slog.Logger) (*ClientNames, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w, err := newWatched("TLS client names", []string{path}, func() (map[string]string, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("TLS client names: %w", err)
		}
		return parseClientNames(path, b)
	}, log)
	if err != nil {
		return nil, err
	}
	return &ClientNames{w: w}, nil
}

func parseClientNames(path string, b []byte) (map[string]string, error) {
	names := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, entry := line, ""
		if i := strings.IndexAny(line, " \t"); i > 0 {
			name, entry = line[:i], strings.TrimSpace(line[i+1:])
		}
		if entry == "" {
			return nil, fmt.Errorf("TLS client names file %s, line %d: want NAME KIND:CERTIFICATE-IDENTITY (KIND: uri, dns or cn)", path, n)
		}
		if err := checkName(name); err != nil {
			return nil, fmt.Errorf("TLS client names file %s, line %d: %w", path, n, err)
		}
		certID, err := certIdentityEntry(entry)
		if err != nil {
			return nil, fmt.Errorf("TLS client names file %s, line %d: %w", path, n, err)
		}
		if other, dup := names[certID]; dup && other != name {
			return nil, fmt.Errorf("TLS client names file %s, line %d: %q is mapped to %q and %q", path, n, certID, other, name)
		}
		names[certID] = name
	}
	return names, sc.Err()
}

// The kinds of certificate identity, as CertIdentity and a names file
// write them.
const (
	kindURI = "uri:"
	kindDNS = "dns:"
	kindCN  = "cn:"
)

// certIdentityEntry is the certificate identity a names file entry names
// (see ClientNames), as CertIdentity writes it.
func certIdentityEntry(entry string) (string, error) {
	kind, value := "", entry
	for _, k := range []string{kindURI, kindDNS, kindCN} {
		if len(entry) >= len(k) && strings.EqualFold(entry[:len(k)], k) {
			kind, value = k, entry[len(k):]
			break
		}
	}
	switch {
	case kind == "" && strings.Contains(entry, "://"):
		kind = kindURI
	case kind == "":
		return "", fmt.Errorf("%q does not say which kind of certificate identity it is: write dns:%s (a DNS SAN) or cn:%s (a subject common name)", entry, entry, entry)
	case value == "":
		return "", fmt.Errorf("%q names no certificate identity", entry)
	case kind != kindURI && strings.HasPrefix(value, "//"):
		// "cn://x": a URI of scheme cn, as files before kinds wrote it,
		// or a CN "//x"? Neither is read.
		return "", fmt.Errorf("%q could be a URI SAN or a %s: write uri:%s for the URI", entry, strings.TrimSuffix(kind, ":"), entry)
	}
	switch kind {
	case kindURI:
		u, err := url.Parse(value)
		if err != nil || u.Scheme == "" {
			return "", fmt.Errorf("%q is not an absolute URI (a URI SAN has a scheme, such as spiffe://)", entry)
		}
		value = u.String() // as CertIdentity writes the certificate's
	case kindDNS:
		if strings.ContainsAny(value, ":/ \t") {
			return "", fmt.Errorf("%q is not a DNS name (for a URI SAN write uri:, for a common name cn:)", entry)
		}
	}
	return kind + value, nil
}

func (c *ClientNames) lookup(certID string) (string, bool) {
	name, ok := c.w.get()[certID]
	return name, ok
}

func (c *ClientNames) known(name string) bool {
	for _, n := range c.w.get() {
		if n == name {
			return true
		}
	}
	return false
}

// CertIdentity is the identity of a client certificate: its first URI
// SAN (a SPIFFE id such as spiffe://example.org/ns/ci/sa/builder), else
// its first DNS SAN, else its subject's common name, written with its
// kind: "uri:spiffe://example.org/ns/ci/sa/builder", "dns:b.example.org",
// "cn:builder". The kind keeps identities of different kinds apart: a
// certificate whose CN is another's URI or DNS SAN is another identity.
// Never a valid name (it holds ':'), it is never a configured identity's
// name either, DefaultIdentity's included. "" when the certificate names
// no identity (or an empty one).
func CertIdentity(c *x509.Certificate) string {
	kind, value := kindCN, c.Subject.CommonName
	switch {
	case len(c.URIs) > 0:
		kind, value = kindURI, c.URIs[0].String()
	case len(c.DNSNames) > 0:
		kind, value = kindDNS, c.DNSNames[0]
	}
	if value == "" {
		return ""
	}
	return kind + value
}

// access finds the identity of each call (see the top of this file) and
// bounds the streams of each identity.
type access struct {
	token      *Token       // --auth-token-file: DefaultIdentity
	tokens     *Tokens      // --auth-tokens-file
	certs      bool         // identities from client certificates
	names      *ClientNames // --tls-client-names
	m          *Metrics
	maxStreams int // per identity; 0: no bound but the process's

	mu      sync.Mutex
	streams map[string]int // open streams by identity
}

func newAccess(opts ServerOptions, m *Metrics) *access {
	a := &access{token: opts.Token, tokens: opts.Tokens, names: opts.ClientNames, m: m, maxStreams: opts.MaxStreamsPerIdentity, streams: map[string]int{}}
	a.certs = a.token == nil && a.tokens == nil && opts.TLS != nil && opts.TLS.ClientCAs != nil
	return a
}

// byToken says whether a bearer token names the identity.
func (a *access) byToken() bool { return a.token != nil || a.tokens != nil }

// label is the metrics label of an identity's namespace: its name when
// it is configured (a token's, a mapped certificate's, or the default),
// else otherIdentity.
func (a *access) label(namespace string) string {
	switch {
	case namespace == "":
		return DefaultIdentity
	case a.tokens != nil && a.tokens.w.get().known[namespace]:
		return namespace
	case a.names != nil && a.names.known(namespace):
		return namespace
	}
	return otherIdentity
}

// tokenName returns the identity a bearer token names.
func (a *access) tokenName(token string) (string, bool) {
	h := sha256.Sum256([]byte(token))
	name, ok := "", false
	if a.token != nil {
		want := a.token.w.get()
		if subtle.ConstantTimeCompare(h[:], want[:]) == 1 {
			name, ok = DefaultIdentity, true
		}
	}
	if a.tokens != nil {
		if n, found := a.tokens.w.get().lookup(h); found && !ok {
			name, ok = n, true
		}
	}
	return name, ok
}

// MetricsHandler serves h (the /metrics page) only to the identities that
// may read it, so that no tenant learns another's names or counts:
//
//   - with no authentication, to every request (the listener's exposure
//     rules are the caller's);
//   - with o.Token alone, to requests that carry it;
//   - with several identities (o.Tokens, or client certificates without
//     tokens), to the identities named in readers only.
//
// A request without the credential gets 401, an identity not in readers
// 403; both say what is missing.
func MetricsHandler(o ServerOptions, readers []string, h http.Handler) http.Handler {
	a := newAccess(o, nil)
	several := a.tokens != nil || a.certs
	may := map[string]bool{}
	for _, r := range readers {
		may[r] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, code, why := a.httpIdentity(r)
		if code == 0 && several && !may[name] {
			code, why = http.StatusForbidden, fmt.Sprintf("the identity %q may not read /metrics: acpnormd's --metrics-identities names the identities that may", name)
		}
		if code != 0 {
			if code == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="acpnormd"`)
			}
			http.Error(w, why, code)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// httpIdentity is authenticate for an HTTP request: the identity, or the
// status to refuse it with and why.
func (a *access) httpIdentity(r *http.Request) (name string, code int, why string) {
	switch {
	case a.byToken():
		scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if !ok || !strings.EqualFold(scheme, "bearer") {
			return "", http.StatusUnauthorized, "this endpoint requires the header \"Authorization: Bearer <token>\" with one of acpnormd's tokens"
		}
		name, ok := a.tokenName(got)
		if !ok {
			return "", http.StatusUnauthorized, "the bearer token is not one this acpnormd was given"
		}
		return name, 0, ""
	case a.certs:
		certID := ""
		if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
			certID = CertIdentity(r.TLS.VerifiedChains[0][0])
		}
		if certID == "" {
			return "", http.StatusUnauthorized, "this endpoint requires a client certificate that names an identity (a URI or DNS SAN, or a subject common name)"
		}
		if a.names == nil {
			return certID, 0, ""
		}
		name, ok := a.names.lookup(certID)
		if !ok {
			return "", http.StatusForbidden, fmt.Sprintf("the client certificate's identity %q is not in this acpnormd's --tls-client-names", certID)
		}
		return name, 0, ""
	}
	return DefaultIdentity, 0, ""
}

// authenticate finds the identity of a call.
func (a *access) authenticate(ctx context.Context) (context.Context, error) {
	switch {
	case a.byToken():
		got, err := auth.AuthFromMD(ctx, "bearer")
		if err != nil {
			a.m.streamRefused("unauthenticated")
			return nil, status.Error(codes.Unauthenticated, "this acpnormd requires the metadata \"authorization: Bearer <token>\"")
		}
		name, ok := a.tokenName(got)
		if !ok {
			a.m.streamRefused("unauthenticated")
			return nil, status.Error(codes.Unauthenticated, "the bearer token is not one this acpnormd was given")
		}
		return withIdentity(ctx, identity{name: name, still: func() bool {
			now, ok := a.tokenName(got)
			return ok && now == name
		}}), nil
	case a.certs:
		certID := peerCertIdentity(ctx)
		if certID == "" {
			a.m.streamRefused("unauthenticated")
			return nil, status.Error(codes.Unauthenticated, "the client certificate names no identity (no URI or DNS SAN, no subject common name)")
		}
		if len(certID) > maxCertIdentityBytes {
			a.m.streamRefused("unauthenticated")
			return nil, status.Errorf(codes.Unauthenticated, "the client certificate's identity is %d bytes, over the %d this acpnormd takes", len(certID), maxCertIdentityBytes)
		}
		if a.names == nil {
			return withIdentity(ctx, identity{name: certID}), nil
		}
		name, ok := a.names.lookup(certID)
		if !ok {
			a.m.streamRefused("unauthenticated")
			return nil, status.Errorf(codes.PermissionDenied, "the client certificate's identity %q is not in this acpnormd's --tls-client-names", certID)
		}
		return withIdentity(ctx, identity{name: name, still: func() bool {
			now, ok := a.names.lookup(certID)
			return ok && now == name
		}}), nil
	}
	return withIdentity(ctx, identity{name: DefaultIdentity}), nil
}

// peerCertIdentity is the identity of the call's verified client
// certificate, or "".
func peerCertIdentity(ctx context.Context) string {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return ""
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.VerifiedChains) == 0 || len(info.State.VerifiedChains[0]) == 0 {
		return ""
	}
	return CertIdentity(info.State.VerifiedChains[0][0])
}

// capStreams refuses a Normalize stream when its identity already has
// maxStreams open (see ServerOptions.MaxStreamsPerIdentity). Health and
// reflection streams count only against the process's cap.
func (a *access) capStreams(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if info.FullMethod != pb.NormalizerService_Normalize_FullMethodName {
		return handler(srv, ss)
	}
	id := identityOf(ss.Context())
	a.mu.Lock()
	if n := a.streams[id.name]; n >= a.maxStreams {
		a.mu.Unlock()
		a.m.streamRefused("quota_streams")
		a.m.refusedIn(a.label(id.namespace()), "quota_streams")
		return status.Errorf(codes.ResourceExhausted, "this identity already has %d streams open (its quota: --quota-streams); close one or try again later", n)
	}
	a.streams[id.name]++
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		if a.streams[id.name]--; a.streams[id.name] == 0 {
			delete(a.streams, id.name)
		}
		a.mu.Unlock()
	}()
	return handler(srv, ss)
}

// recheckEvery is how often a stream checks that its credential still
// names its identity (see revoked).
const recheckEvery = time.Second

// revocation checks, for one stream, that what it authenticated with has
// not been revoked since: at most once per interval, before a request is
// applied.
type revocation struct {
	id       identity
	interval time.Duration
	next     atomic.Int64 // unix nanoseconds of the next check
}

func newRevocation(id identity, interval time.Duration) *revocation {
	r := &revocation{id: id, interval: interval}
	r.next.Store(time.Now().Add(interval).UnixNano())
	return r
}

// revoked returns the error that ends the stream when its credential was
// revoked, else nil.
func (r *revocation) revoked() error {
	if r.id.still == nil {
		return nil
	}
	now := time.Now()
	if now.UnixNano() < r.next.Load() {
		return nil
	}
	r.next.Store(now.Add(r.interval).UnixNano())
	if r.id.still() {
		return nil
	}
	return status.Error(codes.Unauthenticated, "the credential this stream was opened with no longer names its identity (the token or certificate name was removed or changed); the stream is ended, the requests after the "+TrailerRequestsApplied+" trailer's count were not applied")
}
