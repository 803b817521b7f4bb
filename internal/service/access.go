package service

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// stamp identifies one version of a file: it changes when the file is
// rewritten or replaced.
type stamp struct {
	mod, change time.Time
	size        int64
	ino         uint64
}

func stampOf(path string) (stamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return stamp{}, err
	}
	ino, change := changeOf(fi)
	return stamp{mod: fi.ModTime(), change: change, size: fi.Size(), ino: ino}, nil
}

// watched is a value read from files, read again when any of them changes
// (checked on each use: a stat per file, small next to a TLS handshake or
// a call). When a new version does not load, the
// last good one stays in use and the error is logged.
type watched[T any] struct {
	paths []string
	load  func() (T, error)
	log   *slog.Logger
	what  string

	mu     sync.Mutex
	stamps []stamp
	cur    T
}

func newWatched[T any](what string, paths []string, load func() (T, error), log *slog.Logger) (*watched[T], error) {
	w := &watched[T]{paths: paths, load: load, log: log, what: what}
	stamps, err := w.stat()
	if err != nil {
		return nil, err
	}
	v, err := load()
	if err != nil {
		return nil, err
	}
	w.stamps, w.cur = stamps, v
	return w, nil
}

func (w *watched[T]) stat() ([]stamp, error) {
	out := make([]stamp, len(w.paths))
	for i, p := range w.paths {
		s, err := stampOf(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.what, err)
		}
		out[i] = s
	}
	return out, nil
}

// get returns the current value, reloading it first when a file changed.
func (w *watched[T]) get() T {
	w.mu.Lock()
	defer w.mu.Unlock()
	stamps, err := w.stat()
	switch {
	case err != nil:
		// A file being replaced may be missing for a moment.
		w.log.Debug("checking for a new version failed; keeping the version in use", "what", w.what, "err", err)
	case !equalStamps(stamps, w.stamps):
		w.stamps = stamps // a broken version is tried once, not on every use
		v, err := w.load()
		if err != nil {
			w.log.Error("reloading failed; keeping the version in use", "what", w.what, "err", err)
			break
		}
		w.cur = v
		w.log.Info("reloaded", "what", w.what)
	}
	return w.cur
}

func equalStamps(a, b []stamp) bool {
	for i := range a {
		if !a[i].mod.Equal(b[i].mod) || !a[i].change.Equal(b[i].change) || a[i].size != b[i].size || a[i].ino != b[i].ino {
			return false
		}
	}
	return len(a) == len(b)
}

// TLSFiles name the PEM files of the server's TLS identity and, for mutual
// TLS, of the CA that signs client certificates.
type TLSFiles struct {
	Cert, Key string
	ClientCA  string // empty: clients are not asked for a certificate
}

type tlsMaterial struct {
	cert *tls.Certificate
	cas  *x509.CertPool
}

// NewTLSConfig returns a server TLS configuration that serves the files'
// certificate and, when ClientCA is set, requires a client certificate
// signed by that CA. Files are read again when they change (a renewed
// certificate is used for new connections without a restart).
func NewTLSConfig(files TLSFiles, log *slog.Logger) (*tls.Config, error) {
	if files.Cert == "" || files.Key == "" {
		return nil, errors.New("TLS needs both a certificate and a key file")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	paths := []string{files.Cert, files.Key}
	if files.ClientCA != "" {
		paths = append(paths, files.ClientCA)
	}
	w, err := newWatched("TLS certificate", paths, func() (tlsMaterial, error) {
		cert, err := tls.LoadX509KeyPair(files.Cert, files.Key)
		if err != nil {
			return tlsMaterial{}, fmt.Errorf("TLS certificate %s and key %s: %w", files.Cert, files.Key, err)
		}
		m := tlsMaterial{cert: &cert}
		if files.ClientCA != "" {
			pem, err := os.ReadFile(files.ClientCA)
			if err != nil {
				return tlsMaterial{}, fmt.Errorf("client CA: %w", err)
			}
			m.cas = x509.NewCertPool()
			if !m.cas.AppendCertsFromPEM(pem) {
				return tlsMaterial{}, fmt.Errorf("client CA %s holds no PEM certificate", files.ClientCA)
			}
		}
		return m, nil
	}, log)
	if err != nil {
		return nil, err
	}
	perConn := func() *tls.Config {
		m := w.get()
		c := &tls.Config{
			MinVersion:   tls.VersionTLS12,
			NextProtos:   []string{"h2"},
			Certificates: []tls.Certificate{*m.cert},
		}
		if m.cas != nil {
			c.ClientCAs, c.ClientAuth = m.cas, tls.RequireAndVerifyClientCert
		}
		return c
	}
	base := perConn()
	base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) { return perConn(), nil }
	return base, nil
}

// Token is a bearer token read from a file (surrounding whitespace
// ignored), read again when the file changes.
type Token struct {
	w *watched[[32]byte]
}

// NewToken reads the token file; an empty token is an error.
func NewToken(path string, log *slog.Logger) (*Token, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w, err := newWatched("auth token", []string{path}, func() ([32]byte, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return [32]byte{}, fmt.Errorf("auth token: %w", err)
		}
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			return [32]byte{}, fmt.Errorf("auth token file %s is empty", path)
		}
		return sha256.Sum256(b), nil
	}, log)
	if err != nil {
		return nil, err
	}
	return &Token{w: w}, nil
}

// Valid reports whether got is the token, in constant time (the hashes are
// compared, so not even the length leaks).
func (t *Token) Valid(got string) bool {
	want := t.w.get()
	h := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(h[:], want[:]) == 1
}

// openHealth is the health service without the token check, so that probes
// (a kubelet's gRPC probe sends no metadata) can reach it. It tells only
// whether the server is serving.
type openHealth struct{ healthpb.HealthServer }

// AuthFuncOverride implements auth.ServiceAuthFuncOverride.
func (openHealth) AuthFuncOverride(ctx context.Context, _ string) (context.Context, error) {
	return ctx, nil
}
