package main

import (
	"bytes"
	"flag"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/replay"
	"github.com/acpnorm/acpnorm/internal/service"
	"github.com/acpnorm/acpnorm/internal/testlog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func TestServeFlagsAndEnvironment(t *testing.T) {
	t.Setenv("ACPNORM_TTL", "3m")
	t.Setenv("ACPNORM_TEXT_LIMIT", "4096")
	t.Setenv("ACPNORM_LISTEN", "127.0.0.1:7000")
	f, err := parseServe([]string{"--listen", "127.0.0.1:7001", "--grace", "5s"})
	if err != nil {
		t.Fatal(err)
	}
	if f.listen != "127.0.0.1:7001" {
		t.Errorf("listen %q: the flag must beat the environment", f.listen)
	}
	if f.cfg.TTL != 3*time.Minute || f.cfg.TextLimit != 4096 || f.cfg.Grace != 5*time.Second {
		t.Errorf("config %+v", f.cfg)
	}
	if f.metricsListen != "127.0.0.1:9464" {
		t.Errorf("metrics default %q", f.metricsListen)
	}
	if f.gcFloor != 96<<20 {
		t.Errorf("gc floor default %d", f.gcFloor)
	}
	t.Setenv("ACPNORM_GC_FLOOR", "0")
	f, err = parseServe(nil)
	require.NoError(t, err)
	assert.Zero(t, f.gcFloor, "ACPNORM_GC_FLOOR=0 leaves the pacing to Go")
}

func TestServeRejectsBadSettings(t *testing.T) {
	for _, tc := range []struct {
		env, val string
		args     []string
		want     string
	}{
		{env: "ACPNORM_TTL", val: "soon", want: `ACPNORM_TTL="soon": not a duration`},
		{env: "ACPNORM_MAX_CALLS", val: "many", want: `ACPNORM_MAX_CALLS="many": not a whole number`},
		{args: []string{"--text-limit", "10"}, want: "text limit 10 is below 64 bytes"},
		{args: []string{"extra"}, want: "serve takes no arguments"},
		{args: []string{"--store", "etcd://db:2379"}, want: `unknown scheme "etcd"`},
		{args: []string{"--store", "mysql://root:hunter2@db/x"}, want: `"mysql://root:xxxxx@db/x"`},
		{env: "ACPNORM_STORE", val: "file:///var/lib/acpnorm", want: `unknown scheme "file"`},
		{args: []string{"--store-wait-replicas", "1"}, want: "needs a Redis --store"},
		{args: []string{"--store", "redis://r:6379/0", "--store-wait-replicas", "-1"}, want: "want 0 or more"},
		{args: []string{"--store", "redis://r:6379/0", "--store-wait-replicas", "1", "--store-wait-timeout", "0s"}, want: "want a positive duration"},
		{env: "ACPNORM_STORE_WAIT_REPLICAS", val: "two", want: `ACPNORM_STORE_WAIT_REPLICAS="two": not a whole number`},
		{args: []string{"--gc-floor", "-1"}, want: "--gc-floor -1 is negative"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv(tc.env, tc.val)
			}
			_, err := parseServe(tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v %v: error %v, want %q", tc.env, tc.args, err, tc.want)
			}
		})
	}
}

// --store takes memory (the default) or a Redis URL; a Redis that cannot
// be reached stops serve before it listens, naming where it looked but not
// the password.
func TestServeStore(t *testing.T) {
	for _, v := range []string{"", "memory", "MEMORY", "redis://127.0.0.1:6379/0", "rediss://u:p@redis.example:6380/2",
		"redis://s1:26379/0?master_name=acpnorm&addr=s2:26379&addr=s3:26379", "rediss://n1:6379?addr=n2:6379"} {
		if _, err := parseServe([]string{"--store", v}); err != nil {
			t.Errorf("--store %q: %v", v, err)
		}
	}
	t.Setenv("ACPNORM_STORE_WAIT_REPLICAS", "2")
	t.Setenv("ACPNORM_STORE_WAIT_TIMEOUT", "250ms")
	if f, err := parseServe([]string{"--store", "redis://r:6379/0"}); err != nil || f.storeWait != 2 || f.storeWaitTimeout != 250*time.Millisecond {
		t.Errorf("ACPNORM_STORE_WAIT_*: %+v, %v", f, err)
	}
	if st, err := openStore("memory", 0, time.Second, slog.Default()); st != nil || err != nil {
		t.Errorf("--store memory opened %v, %v; want this process's memory", st, err)
	}
	// Port 1 on loopback: nothing listens there.
	var logged testlog.Buffer
	_, err := openStore("redis://user:hunter2@127.0.0.1:1/0", 0, time.Second, slog.New(slog.NewTextHandler(&logged, nil)))
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("an unreachable Redis: %v", err)
	}
	if strings.Contains(logged.String(), "hunter2") {
		t.Errorf("the log shows the password: %s", logged.String())
	}
}

func TestReplayFlagsAnywhere(t *testing.T) {
	f, err := parseReplay([]string{"rec/x.ndjson", "--json", "--final", "--dialect", "codex"})
	if err != nil {
		t.Fatal(err)
	}
	if f.file != "rec/x.ndjson" || !f.json || !f.final || f.dialect != "codex" || f.session != "x" {
		t.Errorf("flags %+v", f)
	}
	f, err = parseReplay(nil)
	if err != nil || f.file != "" || f.session != strings.TrimSuffix(sampleName, ".ndjson") {
		t.Errorf("no FILE: %+v %v", f, err)
	}
	if _, err := parseReplay([]string{"a", "b"}); err == nil {
		t.Error("two files accepted")
	}
}

func TestEmbeddedSampleIsARecording(t *testing.T) {
	lines, err := readRecording("", io.Discard)
	if err != nil || len(lines) < 50 {
		t.Fatalf("%d lines, %v", len(lines), err)
	}
	for _, l := range lines {
		if l.Dir == pb.Direction_DIRECTION_UNSPECIFIED {
			t.Fatalf("line %d has no direction", l.Number)
		}
	}
}

// TestReadmeShowsTheSampleRun holds the README's sample of `acpnormd
// replay` on embedded defaults to the real run: each line it shows is a
// line of the run, in the run's order ("..." stands for lines left out).
func TestReadmeShowsTheSampleRun(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(readme), "prints one row per command:\n\n```\n")
	require.True(t, ok, "README.md has no sample run")
	sample, _, ok := strings.Cut(after, "```")
	require.True(t, ok, "README.md's sample run has no end")

	code, out, errOut := runCLI("replay")
	require.Equal(t, 0, code, errOut)
	run := strings.Split(errOut+out, "\n")
	next := 0
	for _, line := range strings.Split(strings.TrimSuffix(sample, "\n"), "\n") {
		if line == "..." {
			continue
		}
		i := slices.Index(run[next:], line)
		require.GreaterOrEqual(t, i, 0, "README.md shows %q, which the run does not print after line %d:\n%s", line, next, strings.Join(run, "\n"))
		next += i + 1
	}
}

func TestPrintTable(t *testing.T) {
	three := int32(3)
	calls := []*replay.Call{
		{Last: &pb.ShellExec{Command: "printf 'a\\nb\\n';\n exit 3", State: pb.ShellState_SHELL_STATE_ENDED, Outcome: pb.ShellOutcome_SHELL_OUTCOME_FAILED, ExitCode: &three,
			Output: &pb.ShellText{Text: "x\ny\na\nb\n", TotalBytes: 8}}},
		{Last: &pb.ShellExec{Command: "sleep 9", State: pb.ShellState_SHELL_STATE_ENDED, Outcome: pb.ShellOutcome_SHELL_OUTCOME_UNKNOWN,
			Stdout: &pb.ShellText{Text: "tail", TotalBytes: 900000, Truncated: true}}},
	}
	var b bytes.Buffer
	printTable(&b, calls)
	want := `COMMAND                  STATE  OUTCOME  EXIT  OUTPUT                LAST LINES
printf 'a\nb\n'; exit 3  ENDED  FAILED   3     8 B                   a ⏎ b
sleep 9                  ENDED  UNKNOWN  -     900000 B (truncated)  tail
`
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}

// runCLI runs acpnormd in-process and returns its exit status and output.
func runCLI(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

func TestHelpListsCommandsAndFlags(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}} {
		code, out, errOut := runCLI(args...)
		if code != 0 || errOut != "" {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errOut)
		}
		for _, want := range []string{
			"acpnormd [serve] [flags]", "acpnormd replay [flags] [FILE]", "acpnormd health [flags]", "acpnormd version",
			"serve flags:", "-listen", "-metrics-listen", "ACPNORM_TTL",
			"replay flags:", "-dialect", "-keep-going", "-final", "-json",
			"health flags:", "-addr", "-service", "-timeout",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: help lacks %q", args, want)
			}
		}
	}
	// One command's help, asked either way, has its flags and no others.
	for _, args := range [][]string{{"help", "replay"}, {"replay", "--help"}, {"replay", "-h"}} {
		code, out, _ := runCLI(args...)
		if code != 0 || !strings.Contains(out, "-keep-going") || strings.Contains(out, "-metrics-listen") {
			t.Errorf("%v: exit %d\n%s", args, code, out)
		}
	}
}

func TestUnknownCommandNamesTheCommands(t *testing.T) {
	for _, args := range [][]string{{"frobnicate"}, {"help", "frobnicate"}} {
		code, out, errOut := runCLI(args...)
		if code != exitUsage || out != "" {
			t.Errorf("%v: exit %d, stdout %q", args, code, out)
		}
		if !strings.Contains(errOut, `unknown command "frobnicate"`) || !strings.Contains(errOut, "serve, replay, proxy, health, version, help") {
			t.Errorf("%v: stderr %q", args, errOut)
		}
	}
}

func TestBadFlagsAreUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--no-such-flag"}, "flag provided but not defined: -no-such-flag"},
		{[]string{"--text-limit", "10"}, "text limit 10 is below 64 bytes"},
		{[]string{"replay", "--dialect", "klingon"}, `unknown dialect "klingon"; the dialects are generic, `},
		{[]string{"replay", "a", "b"}, "replay takes at most one FILE"},
		{[]string{"replay", "--pace", "-1s"}, "--pace -1s: want a duration of 0 or more"},
		{[]string{"replay", "--timeout", "0"}, "--timeout 0s: want a duration above 0"},
		{[]string{"replay", "--timeout", "-5s"}, "--timeout -5s: want a duration above 0"},
		{[]string{"health", "--timeout", "-1s"}, "--timeout -1s: want a duration above 0"},
		{[]string{"replay", "--session", "s\xff"}, `--session "s\xff" is not valid UTF-8`},
		{[]string{"replay", "--addr", " , "}, `--addr " , " names no address`},
		{[]string{"health", "extra"}, "health takes no arguments"},
		{[]string{"version", "extra"}, "version takes no arguments"},
	} {
		code, _, errOut := runCLI(tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}

func TestVersionFromLinkerFlags(t *testing.T) {
	defer func(v, c string) { version, commit = v, c }(version, commit)
	version, commit = "v1.2.3", "abc123"
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		code, out, _ := runCLI(args...)
		want := "acpnormd v1.2.3\ncommit abc123\n" + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
		if code != 0 || out != want {
			t.Errorf("%v: exit %d\n%q\nwant\n%q", args, code, out, want)
		}
	}
	version, commit = "", ""
	if _, out, _ := runCLI("version"); !strings.Contains(out, "acpnormd ") || !strings.Contains(out, "commit ") {
		t.Errorf("without linker flags: %q", out)
	}
}

func TestHealthDefaultAddressFollowsListen(t *testing.T) {
	for listen, want := range map[string]string{
		"":                "127.0.0.1:50051",
		"0.0.0.0:7000":    "127.0.0.1:7000",
		":7000":           "127.0.0.1:7000",
		"[::]:7000":       "[::1]:7000",
		"10.1.2.3:7000":   "10.1.2.3:7000",
		"127.0.0.1:50051": "127.0.0.1:50051",
	} {
		t.Setenv("ACPNORM_LISTEN", listen) // restored when the test ends
		if listen == "" {
			os.Unsetenv("ACPNORM_LISTEN")
		}
		if got := defaultHealthAddr(); got != want {
			t.Errorf("ACPNORM_LISTEN=%q: health asks %q, want %q", listen, got, want)
		}
	}
}

// TestHealthStatuses asks a real gRPC health service in each state.
func TestHealthStatuses(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	h := health.NewServer()
	healthpb.RegisterHealthServer(g, h)
	go g.Serve(lis)
	addr := lis.Addr().String()
	h.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	h.SetServingStatus("svc.down", healthpb.HealthCheckResponse_NOT_SERVING)

	code, out, errOut := runCLI("health", "--addr", addr)
	if code != 0 || out != addr+" SERVING\n" {
		t.Errorf("serving: exit %d, %q %q", code, out, errOut)
	}
	code, _, errOut = runCLI("health", "--addr", addr, "--service", "svc.down")
	if code != exitFail || !strings.Contains(errOut, addr+" svc.down NOT_SERVING") {
		t.Errorf("not serving: exit %d, %q", code, errOut)
	}
	code, _, errOut = runCLI("health", "--addr", addr, "--service", "svc.missing")
	if code != exitFail || !strings.Contains(errOut, "does not know this service") {
		t.Errorf("unknown service: exit %d, %q", code, errOut)
	}
	g.Stop()
	code, _, errOut = runCLI("health", "--addr", addr, "--timeout", "10s")
	if code != exitFail || !strings.Contains(errOut, "no answer (Unavailable)") {
		t.Errorf("stopped: exit %d, %q", code, errOut)
	}
}

// The configuration page (docs/configuration.md) and the serve flags agree:
// every serve flag has a row whose environment cell names the variable the
// flag reads, and every flag a row names is a serve flag.
func TestConfigurationPageNamesEveryServeFlag(t *testing.T) {
	page, err := os.ReadFile("../../docs/configuration.md")
	require.NoError(t, err)
	fs, _, err := serveFlagSet()
	require.NoError(t, err)
	type row struct{ flags, envs string }
	var rows []row
	cellFlag := regexp.MustCompile("`--([a-z0-9-]+)`")
	for _, line := range strings.Split(string(page), "\n") {
		if !strings.HasPrefix(line, "| `--") {
			continue
		}
		cells := strings.Split(line, " | ")
		require.GreaterOrEqual(t, len(cells), 3, "a configuration row with too few cells: %s", line)
		rows = append(rows, row{cells[0], cells[1]})
		for _, m := range cellFlag.FindAllStringSubmatch(cells[0], -1) {
			assert.NotNil(t, fs.Lookup(m[1]), "docs/configuration.md has a row for --%s, which serve does not have", m[1])
		}
	}
	envOf := regexp.MustCompile(`\(env ([A-Z0-9_]+)\)`)
	fs.VisitAll(func(f *flag.Flag) {
		env := ""
		if m := envOf.FindStringSubmatch(f.Usage); m != nil {
			env = m[1]
		}
		for _, r := range rows {
			if strings.Contains(r.flags, "`--"+f.Name+"`") {
				if env != "" {
					assert.Contains(t, r.envs, "`"+env+"`", "the row of --%s names another environment variable", f.Name)
				}
				return
			}
		}
		t.Errorf("docs/configuration.md has no row for --%s", f.Name)
	})
}

// The quotas default to a quarter of their global limits when clients can
// be several identities, and to no bound of their own with one identity
// (no authentication, or --auth-token-file alone); a set quota stays.
func TestServeQuotaDefaults(t *testing.T) {
	for _, c := range []struct {
		name     string
		args     []string
		sessions int
		streams  int
		calls    int
	}{
		{"no authentication", nil, 0, 0, 0},
		{"one token", []string{"--auth-token-file", "t"}, 0, 0, 0},
		{"named tokens", []string{"--auth-tokens-file", "t"}, 16384 / 4, 1024 / 4, 65536 / 4},
		{"client certificates", []string{"--tls-client-ca", "ca.pem"}, 16384 / 4, 1024 / 4, 65536 / 4},
		{"client certificates and a token", []string{"--tls-client-ca", "ca.pem", "--auth-token-file", "t"}, 0, 0, 0},
		{"set by hand", []string{"--auth-tokens-file", "t", "--quota-sessions", "7", "--max-streams", "8"}, 7, 2, 65536 / 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := parseServe(c.args)
			require.NoError(t, err)
			assert.Equal(t, c.sessions, f.cfg.Quota.Sessions)
			assert.Equal(t, c.calls, f.cfg.Quota.Calls)
			assert.Equal(t, c.streams, f.srv.MaxStreamsPerIdentity)
		})
	}
	_, err := parseServe([]string{"--quota-calls", "-1"})
	assert.ErrorContains(t, err, "--quota-calls -1 is negative")
}

// The handshake bound is 10 s unless set, and must be positive.
func TestServeHandshakeTimeout(t *testing.T) {
	f, err := parseServe(nil)
	require.NoError(t, err)
	assert.Equal(t, 10*time.Second, f.srv.HandshakeTimeout)
	f, err = parseServe([]string{"--handshake-timeout", "3s"})
	require.NoError(t, err)
	assert.Equal(t, 3*time.Second, f.srv.HandshakeTimeout)
	t.Setenv("ACPNORM_HANDSHAKE_TIMEOUT", "20s")
	f, err = parseServe(nil)
	require.NoError(t, err)
	assert.Equal(t, 20*time.Second, f.srv.HandshakeTimeout)
	_, err = parseServe([]string{"--handshake-timeout", "0s"})
	assert.ErrorContains(t, err, "--handshake-timeout 0s is not positive")
}

// The first-stream bound is 10 s unless set; 0 turns it off, and it may
// not be negative.
func TestServeFirstStreamTimeout(t *testing.T) {
	f, err := parseServe(nil)
	require.NoError(t, err)
	assert.Equal(t, 10*time.Second, f.srv.FirstStreamTimeout)
	f, err = parseServe([]string{"--first-stream-timeout", "0s"})
	require.NoError(t, err)
	assert.Zero(t, f.srv.FirstStreamTimeout)
	t.Setenv("ACPNORM_FIRST_STREAM_TIMEOUT", "30s")
	f, err = parseServe(nil)
	require.NoError(t, err)
	assert.Equal(t, 30*time.Second, f.srv.FirstStreamTimeout)
	_, err = parseServe([]string{"--first-stream-timeout", "-1s"})
	assert.ErrorContains(t, err, "--first-stream-timeout -1s is negative")
}

// A client address's share of the connections is half of
// --max-connections unless set (0 then: no bound of its own).
func TestServeMaxConnectionsPerAddress(t *testing.T) {
	for _, c := range []struct {
		name, env string
		args      []string
		want      int
	}{
		{"default", "", nil, service.PerAddressShare(service.DefaultMaxConnections())},
		{"half of --max-connections", "", []string{"--max-connections", "100"}, 50},
		{"one connection", "", []string{"--max-connections", "1"}, 1},
		{"no cap", "", []string{"--max-connections", "0"}, 0},
		{"set to no bound", "", []string{"--max-connections", "100", "--max-connections-per-address", "0"}, 0},
		{"set", "", []string{"--max-connections-per-address", "7"}, 7},
		{"environment", "0", []string{"--max-connections", "100"}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.env != "" {
				t.Setenv("ACPNORM_MAX_CONNECTIONS_PER_ADDRESS", c.env)
			}
			f, err := parseServe(c.args)
			require.NoError(t, err)
			assert.Equal(t, c.want, f.srv.MaxConnectionsPerAddress)
		})
	}
	_, err := parseServe([]string{"--max-connections-per-address", "-1"})
	assert.ErrorContains(t, err, "--max-connections-per-address -1 is negative")
}

// --tls-client-names names certificate identities: it needs client
// certificates, and no token naming the identity instead.
func TestServeClientNamesNeedsClientCertificates(t *testing.T) {
	for _, args := range [][]string{
		{"--tls-client-names", "names"},
		{"--tls-client-names", "names", "--tls-cert", "c", "--tls-key", "k", "--tls-client-ca", "ca", "--auth-tokens-file", "t"},
	} {
		_, err := parseServe(args)
		assert.ErrorContains(t, err, "--tls-client-names")
	}
}

// Every acpnormd command line in the repository's Markdown names only flags
// that its command has: a renamed or removed flag fails here, not on a
// reader's machine. A line's command ends at a comment, a pipe, a closing
// backtick or `--` (after which come an agent's own arguments).
func TestDocsNameOnlyRealFlags(t *testing.T) {
	out, err := exec.Command("git", "-C", "../..", "ls-files", "*.md").Output()
	if err != nil {
		t.Skipf("git ls-files: %v (not a git checkout)", err)
	}
	invocation := regexp.MustCompile(`acpnormd((?:\s+[^\s` + "`" + `|#;&]+)+)`)
	flagName := regexp.MustCompile(`^--?([a-z][a-z0-9-]*)(=.*)?$`)
	checked := 0
	for _, doc := range strings.Fields(string(out)) {
		if strings.Contains(doc, "node_modules/") {
			continue
		}
		b, err := os.ReadFile(filepath.Join("../..", doc))
		require.NoError(t, err)
		text := strings.ReplaceAll(string(b), "\\\n", " ") // a shell line continued
		for n, line := range strings.Split(text, "\n") {
			for _, m := range invocation.FindAllStringSubmatch(line, -1) {
				words := strings.Fields(m[1])
				name := "serve"
				if len(words) > 0 && !strings.HasPrefix(words[0], "-") {
					c, ok := findCommand(words[0])
					if !ok {
						continue // prose: "acpnormd process", "acpnormd replicas"
					}
					name, words = c.name, words[1:]
				}
				c, _ := findCommand(name)
				for _, w := range words {
					if w == "--" {
						break
					}
					f := flagName.FindStringSubmatch(w)
					if f == nil {
						continue
					}
					checked++
					if name == "serve" && (f[1] == "version" || f[1] == "help" || f[1] == "h") {
						continue
					}
					if c.flags == nil || c.flags().Lookup(f[1]) == nil {
						t.Errorf("%s:%d: acpnormd %s has no flag --%s: %s", doc, n+1, name, f[1], strings.TrimSpace(line))
					}
				}
			}
		}
	}
	require.Positive(t, checked, "no acpnormd command line with flags found in the docs")
}

// replay with several addresses, the first of which nothing listens on:
// it moves to the next and prints the same table as on one server.
func TestReplayMovesPastAnAddressThatIsDown(t *testing.T) {
	stop, addr, err := startInProcess()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := lis.Addr().String()
	lis.Close()
	code, want, _ := runCLI("replay", "--addr", addr)
	if code != 0 {
		t.Fatalf("replay on one server: exit %d", code)
	}
	code, got, errOut := runCLI("replay", "--addr", down+", "+addr, "--pace", "1ms", "--session", "again") // a released session is never reopened
	if code != 0 || got != want || !strings.Contains(errOut, "1 reconnect(s)") {
		t.Errorf("exit %d\nstdout %s\nwant %s\nstderr %s", code, got, want, errOut)
	}
}
