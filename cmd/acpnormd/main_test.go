package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/replay"
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
	lines, err := readRecording("")
	if err != nil || len(lines) < 50 {
		t.Fatalf("%d lines, %v", len(lines), err)
	}
	for _, l := range lines {
		if l.Dir == pb.Direction_DIRECTION_UNSPECIFIED {
			t.Fatalf("line %d has no direction", l.Number)
		}
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
