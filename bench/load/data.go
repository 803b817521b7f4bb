// Package load is the load harness of acpnorm's service benchmarks: the
// data sets (real recordings and a generated Grok-like stream), a client
// that replays them on N concurrent Normalize streams and measures what it
// gets back, the server-side CPU and memory figures read from /proc, and
// the chart of the results.
package load

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/jsonlit"
	"github.com/acpnorm/acpnorm/internal/replay"
)

// Frame is one message of a data set, sent as an AcpFrame.
type Frame struct {
	Dir pb.Direction
	Msg []byte
}

// Scenario is a data set: the recordings a stream replays one after the
// other, each under a fresh session id.
type Scenario struct {
	Name string
	// Replays are the recordings; each is sent whole, then its session is
	// closed.
	Replays [][]Frame
	// What says where the data come from.
	What string
}

// Frames returns how many frames one pass over every replay sends.
func (s *Scenario) Frames() int {
	n := 0
	for _, r := range s.Replays {
		n += len(r)
	}
	return n
}

// Bytes returns the size of the messages of one pass.
func (s *Scenario) Bytes() int64 {
	var n int64
	for _, r := range s.Replays {
		for _, f := range r {
			n += int64(len(f.Msg))
		}
	}
	return n
}

// recordingClasses groups the recordings of test/testdata/recordings by
// agent: a scenario per class, named by the file name prefix.
var recordingClasses = []struct{ name, prefix string }{
	{"claude", "claude-"},
	{"codex", "codex-"},
	{"gemini", "gemini-"},
	{"opencode", "opencode-"},
}

// Scenarios returns every data set: one per agent class of the recordings
// in dir, then the generated Grok-like streams without and with byte
// arrays.
func Scenarios(dir string) ([]*Scenario, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.ndjson"))
	if err != nil {
		return nil, err
	}
	var out []*Scenario
	for _, c := range recordingClasses {
		s := &Scenario{Name: c.name}
		var names []string
		for _, f := range files {
			base := filepath.Base(f)
			if !strings.HasPrefix(base, c.prefix) {
				continue
			}
			frames, err := readRecording(f)
			if err != nil {
				return nil, err
			}
			s.Replays = append(s.Replays, frames)
			names = append(names, strings.TrimSuffix(base, ".ndjson"))
		}
		if len(s.Replays) == 0 {
			return nil, fmt.Errorf("no %s*.ndjson recording in %s", c.prefix, dir)
		}
		s.What = "recordings " + strings.Join(names, ", ")
		out = append(out, s)
	}
	for _, bytes := range []bool{false, true} {
		g := GrokConfig{Snapshots: 100, FinalBytes: 150 << 10, ByteArrays: bytes}
		s := &Scenario{Name: g.Name(), Replays: [][]Frame{Grok(g)}, What: g.String()}
		out = append(out, s)
	}
	return out, nil
}

// Mixed returns the mixed load: every replay of every scenario in all
// but grok-bytes (every agent's recordings and the generated Grok-like
// text stream), so that a stream goes through all of them in turn.
func Mixed(all []*Scenario) *Scenario {
	m := &Scenario{Name: "mixed"}
	var names []string
	for _, s := range all {
		if s.Name == "grok-bytes" || s.Name == "mixed" {
			continue
		}
		m.Replays = append(m.Replays, s.Replays...)
		names = append(names, s.Name)
	}
	m.What = "every replay of " + strings.Join(names, ", ")
	return m
}

// Select returns the scenarios named in a comma-separated list ("" or
// "all": every one).
func Select(all []*Scenario, names string) ([]*Scenario, error) {
	if names == "" || names == "all" {
		return all, nil
	}
	var out []*Scenario
	for _, n := range strings.Split(names, ",") {
		found := false
		for _, s := range all {
			if s.Name == strings.TrimSpace(n) {
				out = append(out, s)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown scenario %q", n)
		}
	}
	return out, nil
}

// acpSessionID is an ACP session id in a frame, of two characters or more.
var acpSessionID = regexp.MustCompile(`"sessionId"\s*:\s*"[^"\\]{2,}"`)

// ownACPIds returns a copy of replays in which every ACP session id ends
// in stream's number, two hex digits in place of its last two characters,
// so that every frame keeps its length and the ids of one stream differ
// from another's (of up to 256 streams).
func ownACPIds(replays [][]Frame, stream int) [][]Frame {
	suffix := fmt.Sprintf("%02x", stream%256)
	out := make([][]Frame, len(replays))
	for i, rec := range replays {
		out[i] = make([]Frame, len(rec))
		for j, f := range rec {
			msg := acpSessionID.ReplaceAllFunc(f.Msg, func(m []byte) []byte {
				m = bytes.Clone(m)
				copy(m[len(m)-3:], suffix) // before the closing quote
				return m
			})
			out[i][j] = Frame{Dir: f.Dir, Msg: msg}
		}
	}
	return out
}

func readRecording(file string) ([]Frame, error) {
	lines, err := replay.ReadFile(file)
	if err != nil {
		return nil, err
	}
	frames := make([]Frame, len(lines))
	for i, l := range lines {
		frames[i] = Frame{Dir: l.Dir, Msg: l.Msg}
	}
	return frames, nil
}

// GrokConfig describes a generated Grok-like command: one
// run_terminal_command whose output grows to FinalBytes through Snapshots
// cumulative live updates, as `grok agent stdio` sends it (each update
// carries the whole output so far as content text and, with ByteArrays,
// again as a JSON array of byte values in rawOutput.output).
type GrokConfig struct {
	Snapshots  int
	FinalBytes int
	ByteArrays bool
}

// Name is the scenario name.
func (g GrokConfig) Name() string {
	if g.ByteArrays {
		return "grok-bytes"
	}
	return "grok-text"
}

func (g GrokConfig) String() string {
	s := fmt.Sprintf("generated: %d cumulative snapshots of one command's output up to %d KiB", g.Snapshots, g.FinalBytes>>10)
	if g.ByteArrays {
		s += ", each also as a byte array"
	}
	return s
}

// grokOutput is deterministic output text of n bytes: numbered log lines.
func grokOutput(n int) []byte {
	var b bytes.Buffer
	for i := 1; b.Len() < n; i++ {
		fmt.Fprintf(&b, "step %05d: compiled package/%03d in %d ms\n", i, i%997, (i*37)%1000)
	}
	return b.Bytes()[:n]
}

func byteArray(b []byte) string {
	return string(jsonlit.AppendByteArray(make([]byte, 0, 4*len(b)+2), b))
}

func jstr(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Grok generates the frames of one prompt turn of a Grok-like agent
// running one command, both directions, in wire order.
func Grok(g GrokConfig) []Frame {
	out := grokOutput(g.FinalBytes)
	var fs []Frame
	add := func(dir pb.Direction, msg string) { fs = append(fs, Frame{Dir: dir, Msg: []byte(msg)}) }
	a2c, c2a := pb.Direction_DIRECTION_AGENT_TO_CLIENT, pb.Direction_DIRECTION_CLIENT_TO_AGENT
	update := func(u string) {
		add(a2c, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"g1","update":`+u+`}}`)
	}
	const meta = `"_meta":{"x.ai/tool":{"name":"run_terminal_command","kind":"execute"}}`
	add(c2a, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false}}}`)
	add(a2c, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"grok","version":"bench"},"agentCapabilities":{}}}`)
	add(c2a, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/work/project","mcpServers":[]}}`)
	add(a2c, `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"g1"}}`)
	add(c2a, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"g1","prompt":[{"type":"text","text":"build it"}]}}`)
	update(`{"sessionUpdate":"tool_call","toolCallId":"call_1","title":"run_terminal_command","rawInput":{"command":"make -j4","description":"Build the project","timeout":600000},` + meta + `}`)
	update("{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"call_1\",\"kind\":\"execute\",\"title\":\"Execute `make -j4`\",\"content\":[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"Build the project\"}}]}")
	content := func(s []byte) string {
		return `"content":[{"type":"content","content":{"type":"text","text":` + jstr(string(s)) + `}}]`
	}
	for i := 1; i <= g.Snapshots; i++ {
		so := out[:len(out)*i/g.Snapshots]
		raw := `"rawOutput":{"exit_code":0,"truncated":false,"total_bytes":` + strconv.Itoa(len(so))
		if g.ByteArrays {
			raw += `,"output":` + byteArray(so)
		}
		raw += `}`
		if i < g.Snapshots {
			update(`{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"in_progress",` + content(so) + `,` + raw + `}`)
			continue
		}
		final := `"rawOutput":{"exit_code":0,"signal":null,"timed_out":false,"truncated":false,"total_bytes":` + strconv.Itoa(len(so)) +
			`,"output_for_prompt":` + jstr("exit: 0\n"+string(so))
		if g.ByteArrays {
			final += `,"output":` + byteArray(so)
		}
		final += `}`
		update(`{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"completed",` + content(so) + `,` + final + `}`)
	}
	add(a2c, `{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`)
	return fs
}
