package test

import (
	"github.com/stretchr/testify/require"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// embedProgram is a Go program of another module that embeds the public
// normalize package: it feeds a recording and prints each call folded.
const embedProgram = `package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"github.com/acpnorm/acpnorm/normalize"
)

func main() {
	f, err := os.Open(os.Args[1])
	if err != nil {
		panic(err)
	}
	n := normalize.New(normalize.WithTextLimit(4096))
	output := map[string]string{}
	last := map[string]*normalize.ShellExec{}
	var order []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var line struct{ Msg json.RawMessage }
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			panic(err)
		}
		execs, err := n.Feed("embedded", line.Msg)
		if err != nil {
			fmt.Println("frame error:", err)
		}
		for _, x := range execs {
			if last[x.ToolCallID] == nil {
				order = append(order, x.ToolCallID)
			}
			last[x.ToolCallID] = x
			output[x.ToolCallID] = x.Output.Apply(output[x.ToolCallID])
		}
	}
	for _, id := range order {
		x := last[id]
		exit := "unknown"
		if x.ExitCode != nil {
			exit = fmt.Sprint(*x.ExitCode)
		}
		fmt.Printf("%s|%s|%s|exit %s|%q\n", x.Command, x.State, x.Outcome, exit, output[id])
	}
}
`

// A module outside this repository imports the normalize package (through
// a replace to this checkout), builds without gRPC, and folds a recording.
// It uses the module cache and the Go proxy only.
func TestExternalModuleEmbedsNormalize(t *testing.T) {
	if testing.Short() {
		t.Skip("builds another module")
	}
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	dir := t.TempDir()
	gomod := "module example.com/embedder\n\ngo 1.26.0\n\nrequire github.com/acpnorm/acpnorm v0.0.0\n\nreplace github.com/acpnorm/acpnorm => " + root + "\n"
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	require.NoError(t, err)
	for name, body := range map[string]string{"go.mod": gomod, "go.sum": string(sum), "main.go": embedProgram} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	gocmd := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod -buildvcs=false", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	deps := gocmd("list", "-deps", ".")
	if !strings.Contains(deps, "github.com/acpnorm/acpnorm/normalize\n") {
		t.Fatalf("the program does not import normalize:\n%s", deps)
	}
	for _, heavy := range []string{"google.golang.org/grpc", "google.golang.org/protobuf", "github.com/prometheus/"} {
		if strings.Contains(deps, heavy) {
			t.Errorf("embedding normalize links %s", heavy)
		}
	}
	got := gocmd("run", ".", filepath.Join(root, "test/testdata/recordings/codex-acp-0.16.0_unified-exec_untrusted-approval_scenario-dev.ndjson"))
	want := `rm -f notes.txt && echo removed|ENDED|CANCELLED|exit unknown|""
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do echo tick$i; sleep 0.25; done|ENDED|CANCELLED|exit unknown|""
echo after-cancel; exit 4|ENDED|FAILED|exit 4|"after-cancel\n"
`
	if got != want {
		t.Fatalf("the embedding program printed\n%s\nwant\n%s", got, want)
	}
}
