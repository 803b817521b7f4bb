package dialect

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/internal/accum"
)

// Helpers for the generic, codex and claude dialect tests.

// obsCase is one frame read by one dialect and the observations wanted.
// update is the `update` of a session/update; ask is the `toolCall` of a
// permission ask.
type obsCase struct {
	name   string
	update string
	ask    string
	want   []accum.Observation
}

func runObsCases(t *testing.T, d Dialect, cases []obsCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readCase(d, tc.update, tc.ask)
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got\n%s\nwant\n%s", showObs(got), showObs(tc.want))
			}
		})
	}
}

func readCase(d Dialect, update, ask string) ([]accum.Observation, error) {
	if ask != "" {
		return d.Permission([]byte(`{"sessionId":"s","options":[{"optionId":"ok","kind":"allow_once"}],"toolCall":` + ask + `}`))
	}
	return d.Update([]byte(`{"sessionId":"s","update":` + update + `}`))
}

func showObs(obs []accum.Observation) string {
	var b strings.Builder
	for _, o := range obs {
		fmt.Fprintf(&b, "  %+v", o)
		if o.Exit != nil {
			fmt.Fprintf(&b, " exit=%+v", *o.Exit)
		}
		b.WriteString("\n")
	}
	if len(obs) == 0 {
		b.WriteString("  (none)\n")
	}
	return b.String()
}

func ex(code int32, src accum.ExitSource, placeholder bool) *accum.Exit {
	return &accum.Exit{Code: code, Source: src, Placeholder: placeholder}
}

func txt(stream accum.Stream, kind accum.TextKind, s string) accum.Text {
	return accum.Text{Stream: stream, Kind: kind, Text: s}
}

func one(o accum.Observation) []accum.Observation { return []accum.Observation{o} }

// recCall is what a whole recording said about one tool call.
type recCall struct {
	id       string
	command  string
	shell    accum.Shell
	exit     *accum.Exit
	signal   string
	timedOut bool
	bg       bool
	asked    bool
	reasons  []string
	ended    bool
	texts    []accum.Text
}

// output replays the Combined texts the simple way (append deltas, replace
// on snapshots and finals) to check what a recording adds up to.
func (c *recCall) output(stream accum.Stream) (string, bool) {
	var out []byte
	truncated := false
	for _, t := range c.texts {
		if t.Stream != stream {
			continue
		}
		b := t.Bytes
		if b == nil {
			b = []byte(t.Text)
		}
		if t.Kind == accum.Delta {
			out = append(out, b...)
		} else {
			out = append([]byte(nil), b...)
			truncated = t.Truncated
		}
	}
	return string(out), truncated
}

// replayRecording reads every frame of a recording in
// test/testdata/recordings with d, failing on any frame error, and folds
// the observations per tool call id (terminal-only observations are
// attached to the call that owns the terminal).
func replayRecording(t *testing.T, d Dialect, name string) map[string]*recCall {
	t.Helper()
	path := filepath.Join("..", "..", "test", "testdata", "recordings", name)
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("recording not available: %v", err)
	}
	defer f.Close()
	calls := map[string]*recCall{}
	byTerminal := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	line := 0
	for sc.Scan() {
		line++
		var rec struct {
			Msg json.RawMessage `json:"msg"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("%s:%d: %v", name, line, err)
		}
		fr, err := Read(d, rec.Msg)
		if err != nil {
			t.Fatalf("%s:%d: frame error: %v", name, line, err)
		}
		for _, o := range fr.Observations {
			id := o.ToolCallID
			if id == "" {
				id = byTerminal[o.TerminalID]
			}
			if id == "" {
				t.Fatalf("%s:%d: observation with no call: %+v", name, line, o)
			}
			c := calls[id]
			if c == nil {
				c = &recCall{id: id}
				calls[id] = c
			}
			if o.TerminalID != "" {
				byTerminal[o.TerminalID] = id
			}
			if o.Command != "" {
				c.command = o.Command
			}
			if o.Shell != accum.ShellUnknown {
				c.shell = o.Shell
			}
			if o.Exit != nil {
				c.exit = StrongerExit(c.exit, o.Exit)
			}
			if o.Signal != "" {
				c.signal = o.Signal
			}
			c.timedOut = c.timedOut || o.TimedOut
			c.bg = c.bg || o.Background
			if o.PermissionAsk {
				c.asked = true
				c.reasons = append(c.reasons, o.ApprovalReason)
			}
			c.ended = c.ended || o.Status.Ended()
			c.texts = append(c.texts, o.Texts...)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return calls
}

// exitCode gives the reported exit ("-" when unknown or a placeholder).
func (c *recCall) exitCode() string {
	if c.exit == nil || c.exit.Placeholder {
		return "-"
	}
	return fmt.Sprint(c.exit.Code)
}

func findCall(t *testing.T, calls map[string]*recCall, idPart string) *recCall {
	t.Helper()
	for id, c := range calls {
		if strings.Contains(id, idPart) {
			return c
		}
	}
	t.Fatalf("no call with id containing %q", idPart)
	return nil
}
