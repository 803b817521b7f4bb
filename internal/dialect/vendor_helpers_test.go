package dialect

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/acpnorm/acpnorm/internal/accum"
)

// Helpers shared by the tests of the vendor dialects (opencode, gemini,
// auggie, cursor, grok).

// vendorCase is one frame read by one dialect and the observation wanted.
type vendorCase struct {
	name string
	// update is the `update` of session/update params; ask is the
	// `toolCall` of a permission ask. Exactly one is set.
	update string
	ask    string
	want   []accum.Observation
}

// runVendorCases reads every case with d and compares the whole result.
func runVendorCases(t *testing.T, d Dialect, cases []vendorCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []accum.Observation
			var err error
			if tc.ask != "" {
				got, err = d.Permission([]byte(`{"sessionId":"s","options":[],"toolCall":` + tc.ask + `}`))
			} else {
				got, err = d.Update([]byte(`{"sessionId":"s","update":` + tc.update + `}`))
			}
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("observations differ\n got: %s\nwant: %s", dumpObs(got), dumpObs(tc.want))
			}
		})
	}
}

func dumpObs(obs []accum.Observation) string {
	b, _ := json.MarshalIndent(obs, "", "  ")
	return string(b)
}

// exitOf is exit evidence for a table.
func exitOf(code int32, src accum.ExitSource, placeholder bool) *accum.Exit {
	return &accum.Exit{Code: code, Source: src, Placeholder: placeholder}
}

// combined, stdout and stderr make one text observation.
func combined(kind accum.TextKind, s string) accum.Text {
	return accum.Text{Stream: accum.Combined, Kind: kind, Text: s}
}

func stdoutText(kind accum.TextKind, s string) accum.Text {
	return accum.Text{Stream: accum.Stdout, Kind: kind, Text: s}
}

func stderrText(kind accum.TextKind, s string) accum.Text {
	return accum.Text{Stream: accum.Stderr, Kind: kind, Text: s}
}

// recordedFrame is one line of a wire recording.
type recordedFrame struct {
	Dir  string          `json:"dir"`
	TMs  int64           `json:"t_ms"`
	Msg  json.RawMessage `json:"msg"`
	Line int
}

// loadVendorRecording reads a recording of test/testdata/recordings.
func loadVendorRecording(t *testing.T, name string) []recordedFrame {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "test", "testdata", "recordings", name))
	if err != nil {
		t.Fatalf("recording: %v", err)
	}
	defer f.Close()
	var out []recordedFrame
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		var fr recordedFrame
		if err := json.Unmarshal(sc.Bytes(), &fr); err != nil {
			t.Fatalf("%s:%d: %v", name, n, err)
		}
		fr.Line = n
		out = append(out, fr)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return out
}

// replayedCall is every observation a recording gives about one call.
type replayedCall struct {
	id   string
	obs  []accum.Observation
	asks int
}

// last returns the last observation of the call that carries a status.
func (c *replayedCall) final() accum.Observation {
	for i := len(c.obs) - 1; i >= 0; i-- {
		if c.obs[i].Status.Ended() {
			return c.obs[i]
		}
	}
	return accum.Observation{}
}

// texts returns every text observed for the call, in order.
func (c *replayedCall) texts() []accum.Text {
	var out []accum.Text
	for _, o := range c.obs {
		out = append(out, o.Texts...)
	}
	return out
}

// replayVendorRecording reads every frame of a recording through Read with
// d, failing on any error, and groups the observations by call in the order
// calls first appear. It also returns the frames flagged Cancelled.
func replayVendorRecording(t *testing.T, d Dialect, name string) ([]*replayedCall, int) {
	t.Helper()
	byID := map[string]*replayedCall{}
	var order []*replayedCall
	cancels := 0
	for _, fr := range loadVendorRecording(t, name) {
		f, err := Read(d, fr.Msg)
		if err != nil {
			t.Fatalf("%s:%d: %v", name, fr.Line, err)
		}
		if f.Cancelled {
			cancels++
		}
		for _, o := range f.Observations {
			c := byID[o.ToolCallID]
			if c == nil {
				c = &replayedCall{id: o.ToolCallID}
				byID[o.ToolCallID] = c
				order = append(order, c)
			}
			c.obs = append(c.obs, o)
			if o.PermissionAsk {
				c.asks++
			}
		}
	}
	return order, cancels
}

func describeExit(e *accum.Exit) string {
	if e == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%+v", *e)
}
