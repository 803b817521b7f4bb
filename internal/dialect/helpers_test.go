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
	"github.com/stretchr/testify/require"
)

// Helpers shared by the tests of every dialect: table cases of one frame,
// constructors for wanted observations, and the replayer of the real
// recordings in test/testdata/recordings.

// obsCase is one frame read by one dialect and the observations wanted.
// update is the `update` of session/update params; ask is the `toolCall`
// of a permission ask. Exactly one is set.
type obsCase struct {
	name   string
	update string
	ask    string
	want   []accum.Observation
}

// runObsCases reads every case with d and compares the whole result.
func runObsCases(t *testing.T, d Dialect, cases []obsCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if (tc.update == "") == (tc.ask == "") {
				t.Fatal("a case sets exactly one of update and ask")
			}
			got, err := readCase(d, tc.update, tc.ask)
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			got = withoutProvenance(got)
			if !saysWords(tc.want) {
				got = withoutWords(got)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("observations differ\n got:\n%s\nwant:\n%s", showObs(got), showObs(tc.want))
			}
		})
	}
}

// foldFrames reads each tool call update of frames with d and folds its
// observations into one call, as the engine does: the call's last
// revision, and the last combined text a revision carried (nil for none).
func foldFrames(t *testing.T, d Dialect, id string, frames ...string) (accum.Revision, *accum.Chunk) {
	t.Helper()
	f := newCallFold(id)
	for _, fr := range frames {
		f.read(t, d, fr, "")
	}
	return f.last, f.out
}

// callFold folds what a dialect reads of one call's frames, as the
// engine does: last is the call's last revision, out the last combined
// text a revision carried (nil for none).
type callFold struct {
	c    *accum.Call
	last accum.Revision
	out  *accum.Chunk
}

func newCallFold(id string) *callFold { return &callFold{c: accum.NewCall(id, 1<<20)} }

// read reads one frame, a tool call update or a permission ask (see
// readCase), and folds its observations into the call.
func (f *callFold) read(t *testing.T, d Dialect, update, ask string) {
	t.Helper()
	obs, err := readCase(d, update, ask)
	require.NoError(t, err)
	for i := range obs {
		f.c.Apply(&obs[i])
		if r, ok := f.c.Revision(); ok {
			f.last = r
			if x := r.Texts[accum.Combined]; x != nil {
				f.out = x
			}
		}
	}
}

// readCase reads the case as a whole JSON-RPC message through Read.
func readCase(d Dialect, update, ask string) ([]accum.Observation, error) {
	msg := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":` + update + `}}`
	if ask != "" {
		msg = `{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"sessionId":"s","options":[{"optionId":"ok","kind":"allow_once"}],"toolCall":` + ask + `}}`
	}
	f, err := Read(d, []byte(msg))
	if e := uncheck(f.Observations); e != nil && err == nil {
		err = e
	}
	// Every observation of a dialect whose agent never echoes the
	// command says so (ReadIn); the cases' wants leave it out.
	_, never := Unbound(d).(neverEchoes)
	for i := range f.Observations {
		if f.Observations[i].NoEcho != never && err == nil {
			err = fmt.Errorf("observation %d: NoEcho %v, want %v", i, f.Observations[i].NoEcho, never)
		}
		f.Observations[i].NoEcho = false
	}
	return f.Observations, err
}

// withoutProvenance clears what observations say for explain (Src,
// Unrecognized), which the table cases leave out; provenance_test.go
// tests them.
func withoutProvenance(obs []accum.Observation) []accum.Observation {
	for i := range obs {
		obs[i].Src, obs[i].Unrecognized = accum.Sources{}, nil
	}
	return obs
}

// saysWords says whether observations tell which words were removed
// from their texts (accum.Text.Whole, Observation.Worded), or that words
// removed before were output (Observation.ExitWordsOutput).
func saysWords(obs []accum.Observation) bool {
	for _, o := range obs {
		if o.Worded != (accum.Worded{}) || o.ExitWordsOutput {
			return true
		}
		for _, t := range o.Texts {
			if t.Whole != "" {
				return true
			}
		}
	}
	return false
}

// withoutWords is obs as a call that held none of their texts whole
// reads them (accum.Text.Whole): the words removed are no output, and a
// text that was only words is none. The table cases that test other
// things leave them out; TestClaudeWordsThatWereOutput tests them.
func withoutWords(obs []accum.Observation) []accum.Observation {
	for i := range obs {
		o := &obs[i]
		o.Worded, o.ExitWordsOutput = accum.Worded{}, false
		kept := o.Texts[:0]
		for _, t := range o.Texts {
			if t.Whole != "" && t.Text == "" && !t.Truncated && t.TotalBytes == 0 {
				continue
			}
			t.Whole = ""
			kept = append(kept, t)
		}
		if o.Texts = kept; len(kept) == 0 {
			o.Texts = nil
		}
	}
	return obs
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

// ex is exit evidence for a table.
func ex(code int32, src accum.ExitSource, placeholder bool) *accum.Exit {
	return &accum.Exit{Code: code, Source: src, Placeholder: placeholder}
}

// txt is one text observation.
func txt(stream accum.Stream, kind accum.TextKind, s string) accum.Text {
	return accum.Text{Stream: stream, Kind: kind, Text: s}
}

func one(o accum.Observation) []accum.Observation { return []accum.Observation{o} }

func describeExit(e *accum.Exit) string {
	if e == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%+v", *e)
}

// recFrame is one line of a wire recording.
type recFrame struct {
	Line int
	Msg  json.RawMessage
}

// loadRecording reads a recording of test/testdata/recordings.
func loadRecording(t *testing.T, name string) []recFrame {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "test", "testdata", "recordings", name))
	if err != nil {
		t.Fatalf("recording: %v", err)
	}
	defer f.Close()
	var out []recFrame
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		var rec struct {
			Msg json.RawMessage `json:"msg"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("%s:%d: %v", name, n, err)
		}
		out = append(out, recFrame{Line: n, Msg: rec.Msg})
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return out
}

// recCall is what a whole recording said about one tool call: every
// observation in order, and what they add up to.
type recCall struct {
	id  string
	obs []accum.Observation

	command  string
	shell    accum.Shell
	exit     *accum.Exit
	signal   string
	timedOut bool
	bg       bool
	asks     int
	reasons  []string
	ended    bool
	texts    []accum.Text
}

// final returns the last observation that ends the call.
func (c *recCall) final() accum.Observation {
	for i := len(c.obs) - 1; i >= 0; i-- {
		if c.obs[i].Status.Ended() {
			return c.obs[i]
		}
	}
	return accum.Observation{}
}

// output replays the texts of one stream the simple way (append deltas,
// replace on snapshots and finals) to check what a recording adds up to.
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

// exitCode gives the reported exit ("-" when unknown or a placeholder).
func (c *recCall) exitCode() string {
	if c.exit == nil || c.exit.Placeholder {
		return "-"
	}
	return fmt.Sprint(c.exit.Code)
}

// replayRecording reads every frame of a recording through Read with d,
// failing on any frame error, and groups the observations by call, in the
// order calls first appear (observations that name only a terminal go to
// the call that owns it). It also returns how many frames said Cancelled.
func replayRecording(t *testing.T, d Dialect, name string) ([]*recCall, int) {
	t.Helper()
	return replayFrames(t, d, name, loadRecording(t, name))
}

// replayFrames is replayRecording of frames, those of recording name
// or a changed copy of them.
func replayFrames(t *testing.T, d Dialect, name string, frames []recFrame) ([]*recCall, int) {
	t.Helper()
	byID := map[string]*recCall{}
	byTerminal := map[string]string{}
	var calls []*recCall
	cancels := 0
	for _, fr := range frames {
		f, err := Read(d, fr.Msg)
		if err != nil {
			t.Fatalf("%s:%d: frame error: %v", name, fr.Line, err)
		}
		if f.Cancelled {
			cancels++
		}
		for _, o := range f.Observations {
			id := o.ToolCallID
			if id == "" {
				id = byTerminal[o.TerminalID]
			}
			if id == "" {
				t.Fatalf("%s:%d: observation with no call: %+v", name, fr.Line, o)
			}
			c := byID[id]
			if c == nil {
				c = &recCall{id: id}
				byID[id] = c
				calls = append(calls, c)
			}
			if o.TerminalID != "" {
				byTerminal[o.TerminalID] = id
			}
			c.obs = append(c.obs, o)
			if o.Command != "" {
				c.command = o.Command
			}
			if o.Shell != accum.ShellUnknown {
				c.shell = o.Shell
			}
			if o.Exit != nil {
				c.exit = accum.StrongerExit(c.exit, o.Exit)
			}
			if o.Signal != "" {
				c.signal = o.Signal
			}
			c.timedOut = c.timedOut || o.TimedOut
			c.bg = c.bg || o.Background
			if o.PermissionAsk {
				c.asks++
				c.reasons = append(c.reasons, o.ApprovalReason)
			}
			c.ended = c.ended || o.Status.Ended()
			c.texts = append(c.texts, o.Texts...)
		}
	}
	return calls, cancels
}

func findCall(t *testing.T, calls []*recCall, idPart string) *recCall {
	t.Helper()
	for _, c := range calls {
		if strings.Contains(c.id, idPart) {
			return c
		}
	}
	t.Fatalf("no call with id containing %q", idPart)
	return nil
}
