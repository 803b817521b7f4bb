package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/acpnorm/acpnorm/internal/gcpace"
	"github.com/acpnorm/acpnorm/internal/service"
	"github.com/acpnorm/acpnorm/internal/telemetry"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// serveFlags are the settings of the serve command.
type serveFlags struct {
	listen, metricsListen string
	cfg                   service.Config
	srv                   service.ServerOptions
	shutdown              time.Duration
	logLevel, logFormat   string
	tls                   service.TLSFiles
	tokenFile             string
	tokensFile            string
	clientNames           string
	metricsReaders        string
	insecureListen        bool
	store                 string
	storeWait             int
	storeWaitTimeout      time.Duration
	gcFloor               int
}

// defaultGCFloor is the heap the collector waits for while the live heap
// is small (internal/gcpace).
const defaultGCFloor = gcpace.DefaultFloor

// serveFlagSet defines the serve flags, with defaults from the environment;
// the error names any environment variable that does not parse.
func serveFlagSet() (*flag.FlagSet, *serveFlags, error) {
	f := &serveFlags{cfg: service.DefaultConfig(), srv: service.DefaultServerOptions()}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var errs []error
	str := func(p *string, name, env, def, help string) {
		fs.StringVar(p, name, envString(env, def), help+" (env "+env+")")
	}
	num := func(p *int, name, env string, def int, help string) {
		v, err := envInt(env, def)
		errs = append(errs, err)
		fs.IntVar(p, name, v, help+" (env "+env+")")
	}
	dur := func(p *time.Duration, name, env string, def time.Duration, help string) {
		v, err := envDuration(env, def)
		errs = append(errs, err)
		fs.DurationVar(p, name, v, help+" (env "+env+")")
	}
	boolean := func(p *bool, name, env string, help string) {
		v, err := envBool(env)
		errs = append(errs, err)
		fs.BoolVar(p, name, v, help+" (env "+env+")")
	}
	str(&f.listen, "listen", "ACPNORM_LISTEN", "127.0.0.1:50051", "gRPC listen address")
	str(&f.metricsListen, "metrics-listen", "ACPNORM_METRICS_LISTEN", "127.0.0.1:9464", "Prometheus /metrics listen address; empty disables")
	str(&f.metricsReaders, "metrics-identities", "ACPNORM_METRICS_IDENTITIES", "metrics", "with several identities (--auth-tokens-file, or --tls-client-ca without tokens): comma-separated identities that may\n"+
		"read /metrics; the others get 403, so that no tenant reads another's names and counts")
	num(&f.cfg.TextLimit, "text-limit", "ACPNORM_TEXT_LIMIT", f.cfg.TextLimit, "bytes kept per text field (the most recent tail)")
	num(&f.cfg.MaxCallsPerSession, "max-calls-per-session", "ACPNORM_MAX_CALLS_PER_SESSION", f.cfg.MaxCallsPerSession, "tool calls one session may hold")
	num(&f.cfg.MaxCalls, "max-calls", "ACPNORM_MAX_CALLS", f.cfg.MaxCalls, "tool calls all sessions together may hold")
	num(&f.cfg.MaxSessions, "max-sessions", "ACPNORM_MAX_SESSIONS", f.cfg.MaxSessions, "sessions held at once; a frame opening one more gets RESOURCE_EXHAUSTED\n"+
		"(with --store: sessions cached; the least recently used idle one leaves the cache instead)")
	num(&f.cfg.MemoryBudget, "memory-budget", "ACPNORM_MEMORY_BUDGET", f.cfg.MemoryBudget, "bytes of text all calls may hold; the default is a quarter of the machine's or cgroup's memory")
	num(&f.cfg.SessionMemory, "session-memory", "ACPNORM_SESSION_MEMORY", f.cfg.SessionMemory, "bytes of text one session may hold; 0 means an eighth of --memory-budget")
	num(&f.cfg.MaxIDBytes, "max-id-bytes", "ACPNORM_MAX_ID_BYTES", f.cfg.MaxIDBytes, "longest session, tool call, terminal or JSON-RPC request id accepted")
	dur(&f.cfg.TTL, "ttl", "ACPNORM_TTL", f.cfg.TTL, "evict a session, with its calls, after this long without a frame")
	dur(&f.cfg.Grace, "grace", "ACPNORM_GRACE", f.cfg.Grace, "keep an ended call this long to absorb late frames")
	num(&f.cfg.Tombstones, "tombstones", "ACPNORM_TOMBSTONES", f.cfg.Tombstones, "released calls remembered so that late frames about them are refused")
	num(&f.cfg.SendQueue, "send-queue", "ACPNORM_SEND_QUEUE", f.cfg.SendQueue, "responses queued per stream before reading pauses")
	num(&f.cfg.SendQueueBytes, "send-queue-bytes", "ACPNORM_SEND_QUEUE_BYTES", f.cfg.SendQueueBytes, "bytes of responses queued per stream before reading pauses (one response always passes)")
	num(&f.srv.MaxMessageBytes, "max-message-bytes", "ACPNORM_MAX_MESSAGE_BYTES", f.srv.MaxMessageBytes, "largest request message accepted")
	num(&f.srv.MaxStreams, "max-streams", "ACPNORM_MAX_STREAMS", f.srv.MaxStreams, "streams served at once, per connection and for the whole process; one more is refused with RESOURCE_EXHAUSTED\n"+
		"(health Watch streams apart: at most an eighth of it)")
	num(&f.srv.MaxConnections, "max-connections", "ACPNORM_MAX_CONNECTIONS", f.srv.MaxConnections, "connections served at once (the default: half the open-file limit, at most 4096); one more is closed\n"+
		"as it is accepted, logged and counted; 0: no bound")
	num(&f.srv.MaxConnectionsPerAddress, "max-connections-per-address", "ACPNORM_MAX_CONNECTIONS_PER_ADDRESS", 0, "connections one client address (an IPv4 address, an IPv6 /64) may hold at once (the default: half of --max-connections);\n"+
		"one more is closed as it is accepted, logged and counted; 0: no bound but --max-connections. Clients behind one NAT or proxy\n"+
		"share an address")
	dur(&f.srv.HandshakeTimeout, "handshake-timeout", "ACPNORM_HANDSHAKE_TIMEOUT", f.srv.HandshakeTimeout, "close a new connection that has not finished its TLS handshake and sent HTTP/2's preface within this long,\n"+
		"freeing its --max-connections slot")
	dur(&f.srv.FirstStreamTimeout, "first-stream-timeout", "ACPNORM_FIRST_STREAM_TIMEOUT", f.srv.FirstStreamTimeout, "close a connection that has opened no stream (no call of any kind) within this long of its handshake, freeing its\n"+
		"--max-connections slot; one that has had a stream is left to --max-connection-idle; 0: no bound")
	dur(&f.srv.MaxConnectionIdle, "max-connection-idle", "ACPNORM_MAX_CONNECTION_IDLE", f.srv.MaxConnectionIdle, "close a connection that has had no stream for this long (clients reconnect when they next call); 0 keeps it")
	num(&f.srv.StreamWindowBytes, "stream-window-bytes", "ACPNORM_STREAM_WINDOW_BYTES", f.srv.StreamWindowBytes, "HTTP/2 flow-control window of a stream (a connection's: at least 4 MiB): the request bytes a client may send ahead of\n"+
		"what its stream has read, and so what a stream that stops reading holds in gRPC's buffers; 0: gRPC's window, sized by the\n"+
		"measured bandwidth-delay product from 64 KiB up to 16 MiB a stream")
	num(&f.srv.MaxHeaderBytes, "max-header-bytes", "ACPNORM_MAX_HEADER_BYTES", f.srv.MaxHeaderBytes, "largest metadata (HTTP/2 header list) of a call; a call with more is refused")
	dur(&f.cfg.SendTimeout, "send-timeout", "ACPNORM_SEND_TIMEOUT", f.cfg.SendTimeout, "end a stream (RESOURCE_EXHAUSTED) whose client has read no response for this long")
	dur(&f.cfg.StreamIdleTimeout, "stream-idle-timeout", "ACPNORM_STREAM_IDLE_TIMEOUT", f.cfg.StreamIdleTimeout, "end a Normalize stream (UNAVAILABLE) that has sent no request for this long, freeing its --max-streams slot;\n"+
		"clients open a new stream when they next send; 0 keeps idle streams")
	str(&f.tls.Cert, "tls-cert", "ACPNORM_TLS_CERT", "", "PEM certificate (chain) to serve TLS with; reloaded when the file changes")
	str(&f.tls.Key, "tls-key", "ACPNORM_TLS_KEY", "", "PEM private key of --tls-cert")
	str(&f.tls.ClientCA, "tls-client-ca", "ACPNORM_TLS_CLIENT_CA", "", "PEM CA certificate(s); when set, clients must present a certificate it signed (mutual TLS)")
	str(&f.tokenFile, "auth-token-file", "ACPNORM_AUTH_TOKEN_FILE", "", "file holding a bearer token every call (and /metrics) must carry as 'authorization: Bearer <token>'; health checks are exempt;\n"+
		"its calls are the identity 'default'")
	str(&f.tokensFile, "auth-tokens-file", "ACPNORM_AUTH_TOKENS_FILE", "", "file of named bearer tokens, one 'NAME TOKEN' or 'NAME sha256:HEX' a line: each call is the identity its token names,\n"+
		"and sees only that identity's sessions; reloaded when the file changes (a removed token is refused at once)")
	str(&f.clientNames, "tls-client-names", "ACPNORM_TLS_CLIENT_NAMES", "", "with --tls-client-ca and no tokens: file of 'NAME KIND:CERTIFICATE-IDENTITY' lines naming the identities of client certificates\n"+
		"(uri: the URI SAN, else dns: the DNS SAN, else cn: the subject CN); a certificate it does not name is refused; reloaded when the file changes")
	num(&f.cfg.Quota.Sessions, "quota-sessions", "ACPNORM_QUOTA_SESSIONS", 0, "sessions one identity may hold (with --store: cache); 0: a quarter of --max-sessions when clients are\n"+
		"several identities (--auth-tokens-file, or --tls-client-ca without tokens), else no bound beyond --max-sessions")
	num(&f.cfg.Quota.Calls, "quota-calls", "ACPNORM_QUOTA_CALLS", 0, "tool calls one identity's sessions may hold; 0: a quarter of --max-calls with several identities, else no bound beyond it")
	num(&f.cfg.Quota.Memory, "quota-memory", "ACPNORM_QUOTA_MEMORY", 0, "bytes of text one identity's calls may hold; 0: a quarter of --memory-budget with several identities, else no bound beyond it")
	num(&f.srv.MaxStreamsPerIdentity, "quota-streams", "ACPNORM_QUOTA_STREAMS", 0, "streams one identity may have open; 0: a quarter of --max-streams with several identities, else no bound beyond it")
	boolean(&f.insecureListen, "insecure-listen", "ACPNORM_INSECURE_LISTEN", "allow listening on a non-loopback address without TLS or a token")
	dur(&f.shutdown, "shutdown-timeout", "ACPNORM_SHUTDOWN_TIMEOUT", 10*time.Second, "how long a graceful shutdown may take")
	str(&f.store, "store", "ACPNORM_STORE", "", "where session state lives: empty or 'memory' for this process alone, or a Redis 7 URL,\n"+
		"shared by every replica so any of them can serve any session: one server redis://[user:password@]host:port/db,\n"+
		"Sentinel redis://sentinel:port/db?master_name=NAME&addr=sentinel2:port&..., or Cluster redis://seed:port?addr=seed2:port&...\n"+
		"(rediss:// for TLS)")
	num(&f.storeWait, "store-wait-replicas", "ACPNORM_STORE_WAIT_REPLICAS", 0, "with a Redis --store: answer a frame only once this many replicas hold its commit (Redis WAIT);\n"+
		"a commit they do not acknowledge within --store-wait-timeout gets UNAVAILABLE")
	dur(&f.storeWaitTimeout, "store-wait-timeout", "ACPNORM_STORE_WAIT_TIMEOUT", time.Second, "how long a commit waits for --store-wait-replicas")
	num(&f.gcFloor, "gc-floor", "ACPNORM_GC_FLOOR", defaultGCFloor, "bytes of heap the garbage collector waits for while the live heap is small (while GOGC's own goal,\n"+
		"twice the live heap by default, is below this); past that, Go's own pacing applies; 0 leaves the pacing to Go")
	str(&f.logLevel, "log-level", "ACPNORM_LOG_LEVEL", "info", "debug, info, warn or error")
	str(&f.logFormat, "log-format", "ACPNORM_LOG_FORMAT", "text", "text or json")
	return fs, f, errors.Join(errs...)
}

func parseServe(args []string) (*serveFlags, error) {
	fs, f, err := serveFlagSet()
	if err != nil {
		return nil, err
	}
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("serve takes no arguments, got %q", fs.Args())
	}
	if err := checkStore(f.store, f.storeWait, f.storeWaitTimeout); err != nil {
		return nil, err
	}
	if f.clientNames != "" && (f.tls.ClientCA == "" || f.tokenFile != "" || f.tokensFile != "") {
		return nil, errors.New("--tls-client-names names the identities of client certificates: it needs --tls-client-ca, and no --auth-token-file or --auth-tokens-file (a token names the identity then)")
	}
	if err := f.quotas(); err != nil {
		return nil, err
	}
	if f.srv.MaxConnections < 0 {
		return nil, fmt.Errorf("--max-connections %d is negative", f.srv.MaxConnections)
	}
	if f.srv.MaxConnectionsPerAddress < 0 {
		return nil, fmt.Errorf("--max-connections-per-address %d is negative", f.srv.MaxConnectionsPerAddress)
	}
	if !given(fs, "max-connections-per-address", "ACPNORM_MAX_CONNECTIONS_PER_ADDRESS") {
		f.srv.MaxConnectionsPerAddress = service.PerAddressShare(f.srv.MaxConnections)
	}
	if f.srv.HandshakeTimeout <= 0 {
		return nil, fmt.Errorf("--handshake-timeout %s is not positive", f.srv.HandshakeTimeout)
	}
	if f.srv.FirstStreamTimeout < 0 {
		return nil, fmt.Errorf("--first-stream-timeout %s is negative", f.srv.FirstStreamTimeout)
	}
	if f.srv.MaxConnectionIdle < 0 {
		return nil, fmt.Errorf("--max-connection-idle %s is negative", f.srv.MaxConnectionIdle)
	}
	if f.gcFloor < 0 {
		return nil, fmt.Errorf("--gc-floor %d is negative", f.gcFloor)
	}
	return f, f.cfg.Validate()
}

// given says whether the flag name, or the environment variable env, was
// set.
func given(fs *flag.FlagSet, name, env string) bool {
	_, set := os.LookupEnv(env)
	fs.Visit(func(fl *flag.Flag) { set = set || fl.Name == name })
	return set
}

// severalIdentities says whether clients can be more than one identity:
// named tokens, or client certificates without tokens.
func (f *serveFlags) severalIdentities() bool {
	return f.tokensFile != "" || f.tls.ClientCA != "" && f.tokenFile == ""
}

// quotas checks the quota flags and fills in their defaults: with several
// identities a quarter of the matching global limit, so that one
// identity at its quota leaves the others room; with one, none.
func (f *serveFlags) quotas() error {
	q := &f.cfg.Quota
	for _, c := range []struct {
		name string
		v    *int
		of   int
	}{
		{"--quota-sessions", &q.Sessions, f.cfg.MaxSessions},
		{"--quota-calls", &q.Calls, f.cfg.MaxCalls},
		{"--quota-memory", &q.Memory, f.cfg.MemoryBudget},
		{"--quota-streams", &f.srv.MaxStreamsPerIdentity, f.srv.MaxStreams},
	} {
		if *c.v < 0 {
			return fmt.Errorf("%s %d is negative", c.name, *c.v)
		}
		if *c.v == 0 && f.severalIdentities() {
			*c.v = max(c.of/4, 1)
		}
	}
	return nil
}

func serve(args []string) error {
	f, err := parseServe(args)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		err = usageError{err}
	}
	if err != nil {
		return err
	}
	log, err := newLogger(f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	defer gcpace.Start(int64(f.gcFloor)).Stop()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	st, err := openStore(f.store, f.storeWait, f.storeWaitTimeout, log)
	if err != nil {
		return err
	}
	if st != nil {
		defer st.Close()
		f.cfg.Store = st
	}
	svc, err := service.New(f.cfg, service.NewMetrics(reg), log)
	if err != nil {
		return err
	}
	if err := f.access(log); err != nil {
		return err
	}
	lis, err := net.Listen("tcp", f.listen)
	if err != nil {
		return err
	}
	if err := f.checkExposure(lis.Addr(), "--listen"); err != nil {
		lis.Close()
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	runCtx, cancelRun := context.WithCancel(context.Background())
	defer cancelRun()
	go svc.Run(runCtx)

	var metrics *http.Server
	metricsAddr := ""
	if f.metricsListen != "" {
		mlis, err := net.Listen("tcp", f.metricsListen)
		if err != nil {
			lis.Close()
			return fmt.Errorf("metrics: %w", err)
		}
		if err := f.checkExposure(mlis.Addr(), "--metrics-listen"); err != nil {
			lis.Close()
			mlis.Close()
			return err
		}
		metricsAddr = mlis.Addr().String()
		var h http.Handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
		h = service.MetricsHandler(f.srv, splitList(f.metricsReaders), h)
		mux := http.NewServeMux()
		mux.Handle("/metrics", h)
		metrics = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, TLSConfig: f.srv.TLS}
		if f.srv.TLS != nil {
			mlis = tls.NewListener(mlis, f.srv.TLS)
		}
		go func() {
			if err := metrics.Serve(mlis); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("metrics server stopped", "err", err)
			}
		}()
	}

	tel, err := telemetry.FromEnv(context.Background(), versionOrDevel())
	if err != nil {
		lis.Close()
		return fmt.Errorf("OpenTelemetry (OTEL_* environment): %w", err)
	}
	if tel != nil {
		f.srv.StatsHandler = telemetry.ServerHandler(tel.Providers())
		log.Info("OpenTelemetry on", "endpoint", otelEndpoint())
		defer func() { // flush what is buffered, within the shutdown bound
			fctx, cancel := context.WithTimeout(context.Background(), f.shutdown)
			defer cancel()
			if err := tel.Shutdown(fctx); err != nil {
				log.Warn("OpenTelemetry: flushing at shutdown", "err", err)
			}
		}()
	}
	srv := service.NewServer(svc, f.srv, log)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	log.Info("serving", "grpc", lis.Addr().String(), "metrics", metricsAddr)

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down", "deadline", f.shutdown)
	sctx, cancel := context.WithTimeout(context.Background(), f.shutdown)
	defer cancel()
	srv.Shutdown(sctx)
	if metrics != nil {
		_ = metrics.Shutdown(sctx)
	}
	log.Info("stopped")
	return nil
}

// access loads the TLS files and the token the flags name.
func (f *serveFlags) access(log *slog.Logger) error {
	if f.tls.Cert != "" || f.tls.Key != "" || f.tls.ClientCA != "" {
		if f.tls.Cert == "" || f.tls.Key == "" {
			return usageError{errors.New("--tls-cert and --tls-key go together (and --tls-client-ca needs both)")}
		}
		c, err := service.NewTLSConfig(f.tls, log)
		if err != nil {
			return err
		}
		f.srv.TLS = c
	}
	if f.tokenFile != "" {
		t, err := service.NewToken(f.tokenFile, log)
		if err != nil {
			return err
		}
		f.srv.Token = t
	}
	if f.tokensFile != "" {
		newTokens := service.NewTokens
		if f.tokenFile != "" {
			newTokens = service.NewTokensBeside // its token lets callers in
		}
		t, err := newTokens(f.tokensFile, log)
		if err != nil {
			return err
		}
		f.srv.Tokens = t
	}
	if f.clientNames != "" {
		c, err := service.NewClientNames(f.clientNames, log)
		if err != nil {
			return err
		}
		f.srv.ClientNames = c
	}
	if f.tokenProtected() && f.srv.TLS == nil {
		log.Warn("a bearer token without TLS crosses the network in clear text; add --tls-cert and --tls-key unless a proxy terminates TLS")
	}
	return nil
}

// tokenProtected says whether calls need a bearer token.
func (f *serveFlags) tokenProtected() bool { return f.srv.Token != nil || f.srv.Tokens != nil }

// checkExposure refuses a non-loopback address that neither TLS nor a
// token protects, unless --insecure-listen says that is meant.
func (f *serveFlags) checkExposure(addr net.Addr, flagName string) error {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || tcp.IP.IsLoopback() || f.insecureListen || f.srv.TLS != nil || f.tokenProtected() {
		return nil
	}
	return fmt.Errorf("refusing to serve on %s (%s): it is not a loopback address, and without --tls-cert/--tls-key or --auth-token-file/--auth-tokens-file anyone who can reach it could read every session's commands and output; add TLS or a token, or pass --insecure-listen if the network is private", addr, flagName)
}

func newLogger(level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: %w", level, err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("log format %q: want text or json", format)
}

func envString(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

func envBool(name string) (bool, error) {
	v, ok := os.LookupEnv(name)
	if !ok || v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s=%q: not true or false", name, v)
	}
	return b, nil
}

func envInt(name string, def int) (int, error) {
	v, ok := os.LookupEnv(name)
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return def, fmt.Errorf("%s=%q: not a whole number", name, v)
	}
	return n, nil
}

func envDuration(name string, def time.Duration) (time.Duration, error) {
	v, ok := os.LookupEnv(name)
	if !ok {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return def, fmt.Errorf("%s=%q: not a duration such as 10m", name, v)
	}
	return d, nil
}

// versionOrDevel is this binary's version for the telemetry resource.
func versionOrDevel() string {
	if v, _, _ := buildVersion(); v != "" {
		return v
	}
	return "devel"
}

// otelEndpoint is the OTLP endpoint the environment names, for the log.
func otelEndpoint() string {
	for _, name := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"} {
		if v := os.Getenv(name); v != "" {
			return v
		}
	}
	return ""
}

// splitList splits a comma-separated flag value, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
