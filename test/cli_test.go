package test

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/internal/testcerts"
	"github.com/acpnorm/acpnorm/internal/testredis"
)

// The command line of the real binary: help, version and exit statuses.

var (
	cliOnce sync.Once
	cliBin  string
	cliErr  error
)

const cliVersion, cliCommit = "v0.0.0-clitest", "0123456789abcdef"

// buildCLI builds cmd/acpnormd once, with its version and commit set by
// -ldflags as a release build sets them.
func buildCLI(t *testing.T) string {
	t.Helper()
	cliOnce.Do(func() {
		dir, err := os.MkdirTemp("", "acpnormd-cli-")
		if err != nil {
			cliErr = err
			return
		}
		cliBin = filepath.Join(dir, "acpnormd")
		out, err := exec.Command("go", "build",
			"-ldflags", "-X main.version="+cliVersion+" -X main.commit="+cliCommit,
			"-o", cliBin, "../cmd/acpnormd").CombinedOutput()
		if err != nil {
			cliErr = errors.New("go build: " + err.Error() + "\n" + string(out))
		}
	})
	if cliErr != nil {
		t.Fatal(cliErr)
	}
	return cliBin
}

// runBin runs the binary and returns its exit status, stdout and stderr.
func runBin(t *testing.T, bin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, o.String(), e.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), o.String(), e.String()
	}
	t.Fatalf("%s %v: %v", bin, args, err)
	return 0, "", ""
}

func TestCLIVersion(t *testing.T) {
	bin := buildCLI(t)
	want := "acpnormd " + cliVersion + "\ncommit " + cliCommit + "\n" + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	for _, arg := range []string{"version", "--version"} {
		code, out, errOut := runBin(t, bin, arg)
		if code != 0 || out != want || errOut != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want %q", arg, code, out, errOut, want)
		}
	}
}

func TestCLIHelpAndUnknownCommand(t *testing.T) {
	bin := buildCLI(t)
	for _, arg := range []string{"help", "--help"} {
		code, out, _ := runBin(t, bin, arg)
		if code != 0 {
			t.Errorf("%s: exit %d", arg, code)
		}
		for _, want := range []string{"acpnormd [serve] [flags]", "acpnormd replay", "acpnormd health", "acpnormd version", "-listen", "-keep-going", "-addr"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: no %q in\n%s", arg, want, out)
			}
		}
	}
	code, out, errOut := runBin(t, bin, "servr")
	if code != 2 || out != "" || !strings.Contains(errOut, `unknown command "servr"; the commands are serve, replay, proxy, health, version, help`) {
		t.Errorf("unknown command: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// writeRecording writes lines as a recording file and returns its path.
func writeRecording(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "rec.ndjson")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCLIReplayExitStatuses(t *testing.T) {
	bin := buildCLI(t)
	real, err := os.ReadFile("testdata/recordings/codex-acp-0.16.0_shell-command_terminal-meta.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	withBadFrame := writeRecording(t, strings.TrimSpace(string(real)), "this line is not JSON")

	code, out, errOut := runBin(t, bin, "replay", withBadFrame)
	if code != 1 || !strings.Contains(out, "ENDED  FAILED") || !strings.Contains(errOut, "frame error: line ") || !strings.Contains(errOut, "1 frame error(s)") {
		t.Errorf("frame error: exit %d, want 1\nstdout %s\nstderr %s", code, out, errOut)
	}
	code, out, errOut = runBin(t, bin, "replay", "--keep-going", withBadFrame)
	if code != 0 || !strings.Contains(out, "ENDED  FAILED") || !strings.Contains(errOut, "frame error: line ") {
		t.Errorf("--keep-going: exit %d, want 0\nstdout %s\nstderr %s", code, out, errOut)
	}
	code, _, errOut = runBin(t, bin, "replay", "--json", "--final", withBadFrame)
	if code != 1 {
		t.Errorf("--json with a frame error: exit %d, want 1; stderr %s", code, errOut)
	}

	noShell := writeRecording(t,
		`{"jsonrpc":"2.0","id":1,"result":{"agentInfo":{"name":"someagent"}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hello"}}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"r1","kind":"read","title":"Read a.txt","status":"completed"}}}`)
	code, out, errOut = runBin(t, bin, "replay", noShell)
	if code != 0 || !strings.Contains(out, "no shell commands found in 3 lines of "+noShell) || strings.Contains(out, "COMMAND") {
		t.Errorf("no shell commands: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	code, out, errOut = runBin(t, bin, "replay", "--json", noShell)
	if code != 0 || out != "" || !strings.Contains(errOut, "no shell commands found") {
		t.Errorf("no shell commands, --json: exit %d\nstdout %q\nstderr %s", code, out, errOut)
	}

	code, out, errOut = runBin(t, bin, "replay", "--final", "testdata/recordings/codex-acp-0.16.0_shell-command_terminal-meta.ndjson")
	if code != 0 || !strings.Contains(out, "ENDED  FAILED") || strings.Contains(errOut, "frame error") {
		t.Errorf("a clean recording: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
}

// TestCLIReplayChecksDialectFirst points replay at a listener: an unknown
// dialect must be refused before replay connects to it.
func TestCLIReplayChecksDialectFirst(t *testing.T) {
	bin := buildCLI(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	code, _, errOut := runBin(t, bin, "replay", "--addr", lis.Addr().String(), "--dialect", "klingon", "testdata/recordings/codex-acp-0.16.0_shell-command_terminal-meta.ndjson")
	if code != 2 || !strings.Contains(errOut, `unknown dialect "klingon"; the dialects are generic,`) {
		t.Errorf("exit %d, stderr %s", code, errOut)
	}
	// The process has exited: a connection it made would be queued already.
	lis.(*net.TCPListener).SetDeadline(time.Now().Add(100 * time.Millisecond))
	if c, err := lis.Accept(); err == nil {
		c.Close()
		t.Error("replay connected to the server before refusing the dialect")
	}
}

// TestCLIHealth checks a real server with the health command: 0 while it
// serves, 1 once it has stopped.
func TestCLIHealth(t *testing.T) {
	bin := buildCLI(t)
	d := startDaemon(t, bin)
	code, out, errOut := runBin(t, bin, "health", "--addr", d.grpc)
	if code != 0 || out != d.grpc+" SERVING\n" {
		t.Errorf("serving: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, _ = runBin(t, bin, "health", "--addr", d.grpc, "--service", "acpnorm.v1.NormalizerService")
	if code != 0 || !strings.Contains(out, "acpnorm.v1.NormalizerService SERVING") {
		t.Errorf("the service: exit %d, stdout %q", code, out)
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.exited:
	case <-time.After(15 * time.Second):
		t.Fatal("acpnormd did not stop within 15s of SIGTERM")
	}
	code, out, errOut = runBin(t, bin, "health", "--addr", d.grpc)
	if code != 1 || out != "" || !strings.HasPrefix(errOut, "acpnormd health: "+d.grpc+": no answer (Unavailable)") {
		t.Errorf("stopped: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	for line := range d.logs {
		if strings.Contains(line, "grpc.health") {
			t.Errorf("a health check was logged at the default level: %s", line)
		}
	}
}

// TestCLIHealthFollowsTheStore runs the real server on a real
// redis-server and asks it with the health command as a probe would:
// readiness ("" and the Normalizer service) exits 1, saying NOT_SERVING,
// while Redis is down and 0 once it is back, with no frame sent;
// liveness (--service liveness) exits 0 throughout.
func TestCLIHealthFollowsTheStore(t *testing.T) {
	bin := buildCLI(t)
	redisSrv := testredis.StartServer(t)
	d := startDaemon(t, bin, "--store", redisSrv.URL)
	health := func(service string) (int, string) {
		code, out, errOut := runBin(t, bin, "health", "--addr", d.grpc, "--service", service)
		return code, out + errOut
	}
	waitFor := func(service string, want int, why string) string {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			code, out := health(service)
			if code == want {
				return out
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: health --service %q exits %d after 15s (%s), want %d", why, service, code, out, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	for _, s := range []string{"", "acpnorm.v1.NormalizerService", "liveness"} {
		if code, out := health(s); code != 0 || !strings.Contains(out, "SERVING") {
			t.Errorf("Redis up: health --service %q: exit %d, %q", s, code, out)
		}
	}
	redisSrv.Stop()
	out := waitFor("", 1, "Redis down")
	if !strings.Contains(out, d.grpc+" NOT_SERVING") {
		t.Errorf("Redis down: %q, want it to say NOT_SERVING", out)
	}
	if code, out := health("acpnorm.v1.NormalizerService"); code != 1 || !strings.Contains(out, "NOT_SERVING") {
		t.Errorf("Redis down: the Normalizer service: exit %d, %q", code, out)
	}
	if code, out := health("liveness"); code != 0 || out != d.grpc+" liveness SERVING\n" {
		t.Errorf("Redis down: liveness: exit %d, %q; a liveness probe would restart the pod", code, out)
	}
	redisSrv.Start()
	waitFor("", 0, "Redis back")
	if code, out := health("acpnorm.v1.NormalizerService"); code != 0 {
		t.Errorf("Redis back: the Normalizer service: exit %d, %q", code, out)
	}
}

// TestCLIOverTLSAndToken runs the real server with TLS and a bearer token
// and reaches it with health and replay --addr as a script would.
func TestCLIOverTLSAndToken(t *testing.T) {
	bin := buildCLI(t)
	dir := t.TempDir()
	if err := testcerts.Write(dir); err != nil {
		t.Fatal(err)
	}
	ca, token := filepath.Join(dir, testcerts.CA), filepath.Join(dir, testcerts.Token)
	d := startDaemon(t, bin, "--tls-cert", filepath.Join(dir, testcerts.ServerCert), "--tls-key", filepath.Join(dir, testcerts.ServerKey), "--auth-token-file", token)

	// Health is exempt from the token, not from TLS.
	code, out, errOut := runBin(t, bin, "health", "--addr", d.grpc, "--ca-file", ca)
	if code != 0 || out != d.grpc+" SERVING\n" {
		t.Errorf("health over TLS: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, _, errOut = runBin(t, bin, "health", "--addr", d.grpc); code != 1 {
		t.Errorf("plaintext health to a TLS server: exit %d, stderr %q", code, errOut)
	}

	rec := "testdata/recordings/codex-acp-0.16.0_shell-command_terminal-meta.ndjson"
	code, out, errOut = runBin(t, bin, "replay", "--addr", d.grpc, "--ca-file", ca, "--token-file", token, rec)
	if code != 0 || !strings.Contains(out, "ENDED  FAILED     3") {
		t.Errorf("replay with TLS and the token: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	code, _, errOut = runBin(t, bin, "replay", "--addr", d.grpc, "--ca-file", ca, rec)
	if code != 1 || !strings.Contains(errOut, "Unauthenticated") {
		t.Errorf("replay without the token: exit %d, stderr %s", code, errOut)
	}
}
