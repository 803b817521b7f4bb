package load

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/dialect"
)

// TestGrokSnapshots checks that the generated stream is what the Grok
// dialect reads as cumulative snapshots growing to the configured size,
// with the byte array and the content text saying the same.
func TestGrokSnapshots(t *testing.T) {
	for _, arrays := range []bool{false, true} {
		g := GrokConfig{Snapshots: 10, FinalBytes: 4000, ByteArrays: arrays}
		frames := Grok(g)
		d, ok := dialect.Lookup("grok")
		if !ok {
			t.Fatal("no grok dialect")
		}
		var sizes []int
		var last []byte
		for i, f := range frames {
			if !json.Valid(f.Msg) {
				t.Fatalf("frame %d is not JSON", i)
			}
			if f.Dir != pb.Direction_DIRECTION_AGENT_TO_CLIENT {
				continue
			}
			fr, err := dialect.Read(d, f.Msg)
			if err != nil {
				t.Fatalf("frame %d: %v", i, err)
			}
			if i == 1 && fr.AgentName != "grok" {
				t.Fatalf("initialize names %q", fr.AgentName)
			}
			for _, o := range fr.Observations {
				for _, tx := range o.Texts {
					out := tx.Bytes
					if !arrays {
						out = []byte(tx.Text)
					}
					if last != nil && !bytes.HasPrefix(out, last) {
						t.Fatalf("frame %d: snapshot does not extend the previous one", i)
					}
					last = out
					sizes = append(sizes, len(out))
				}
			}
		}
		if len(sizes) != g.Snapshots || sizes[len(sizes)-1] != g.FinalBytes {
			t.Fatalf("arrays=%v: snapshot sizes %v, want %d growing to %d", arrays, sizes, g.Snapshots, g.FinalBytes)
		}
	}
}

func TestGHZDataIsProtoJSON(t *testing.T) {
	s := &Scenario{Name: "x", Replays: [][]Frame{Grok(GrokConfig{Snapshots: 2, FinalBytes: 100})}}
	b, err := GHZData(s, "n")
	if err != nil {
		t.Fatal(err)
	}
	var msgs []map[string]any
	if err := json.Unmarshal(b, &msgs); err != nil {
		t.Fatal(err)
	}
	if len(msgs) != s.Frames()+1 {
		t.Fatalf("%d messages, want %d frames and a SessionClosed", len(msgs), s.Frames())
	}
	if _, ok := msgs[len(msgs)-1]["sessionClosed"]; !ok {
		t.Fatalf("last message %v", msgs[len(msgs)-1])
	}
}

func TestSummarizeMedians(t *testing.T) {
	var rs []*Result
	for i, fps := range []float64{10, 30, 20} {
		rs = append(rs,
			&Result{Scenario: "s", Streams: 8, Server: "a", Round: i, FramesPerSec: fps, P99ms: fps},
			&Result{Scenario: "s", Streams: 8, Server: "b", Round: i, FramesPerSec: 40, P99ms: 10, FrameErrors: 1})
	}
	rows := Summarize(rs, [2]string{"a", "b"})
	if len(rows) != 1 || rows[0].FPS != [2]float64{20, 40} || rows[0].FPSRatio != 0.5 || rows[0].P99Ratio != 2 || rows[0].Errors != 3 {
		t.Fatalf("rows %+v", rows)
	}
}

// TestCPUPerFrame checks the server's CPU per frame: the CPU time over the
// frames counted, its median over rounds, and the ratio of the first
// server's to the second's.
func TestCPUPerFrame(t *testing.T) {
	require.Equal(t, 12.5, perFrame(25*time.Millisecond, 2000))
	require.Zero(t, perFrame(time.Second, 0), "no frame: no figure, not an infinity")
	var rs []*Result
	for i, us := range []float64{30, 10, 20} {
		rs = append(rs,
			&Result{Scenario: "s", Streams: 8, Server: "old", Round: i, ServerUsPerFrame: us},
			&Result{Scenario: "s", Streams: 8, Server: "new", Round: i, ServerUsPerFrame: 2 * us})
	}
	rows := Summarize(rs, [2]string{"new", "old"})
	require.Len(t, rows, 1)
	require.Equal(t, [2]float64{40, 20}, rows[0].UsPerFrame)
	require.Equal(t, 2.0, rows[0].CPURatio)
	var table, md strings.Builder
	PrintPair(&table, rows, [2]string{"new", "old"})
	require.Contains(t, table.String(), "CPU µs/frame new")
	require.Contains(t, table.String(), "2.00×")
	PrintPairMarkdown(&md, rows, [2]string{"new", "old"})
	lines := strings.Split(strings.TrimSpace(md.String()), "\n")
	require.Len(t, lines, 3)
	for _, l := range lines {
		require.Equal(t, strings.Count(lines[0], "|"), strings.Count(l, "|"), "every Markdown row has the header's columns: %q", l)
	}
}

// TestOpenCallFrames checks that the memory run's session is what the Grok
// dialect reads as that many calls, each with a live output of the size
// asked, none ended.
func TestOpenCallFrames(t *testing.T) {
	d, ok := dialect.Lookup("grok")
	if !ok {
		t.Fatal("no grok dialect")
	}
	outputs := map[string]string{}
	for i, f := range OpenCallFrames(3, 100) {
		if f.Dir != pb.Direction_DIRECTION_AGENT_TO_CLIENT {
			continue
		}
		fr, err := dialect.Read(d, f.Msg)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		for _, o := range fr.Observations {
			if o.Status.Ended() {
				t.Fatalf("frame %d ends call %s", i, o.ToolCallID)
			}
			for _, tx := range o.Texts {
				outputs[o.ToolCallID] = tx.Text
			}
		}
	}
	if len(outputs) != 3 {
		t.Fatalf("outputs %v, want 3 calls", outputs)
	}
	for id, out := range outputs {
		if len(out) != 100 {
			t.Fatalf("call %s: %d bytes of output, want 100", id, len(out))
		}
	}
}

// TestMixed checks that the mixed load plays every replay of every
// scenario but the byte-array one, once per pass.
func TestMixed(t *testing.T) {
	all, err := Scenarios("../../test/testdata/recordings")
	if err != nil {
		t.Fatal(err)
	}
	m := Mixed(all)
	want := 0
	for _, s := range all {
		if s.Name != "grok-bytes" {
			want += len(s.Replays)
		}
	}
	if len(m.Replays) != want || want == 0 {
		t.Fatalf("mixed has %d replays, want %d", len(m.Replays), want)
	}
	for _, r := range m.Replays {
		if len(r) > 0 && bytes.Contains(r[len(r)/2].Msg, []byte(`"output":[`)) {
			t.Fatal("mixed includes the byte-array stream")
		}
	}
	if again := Mixed(append(all, m)); len(again.Replays) != want {
		t.Fatalf("mixed of a list holding mixed has %d replays, want %d", len(again.Replays), want)
	}
}

// TestOwnACPIds: each stream's copy of the replays has ACP session ids of
// its own, the same in every frame of one stream, in frames of the same
// length that differ from the recorded ones only there; the recorded
// replays are unchanged.
func TestOwnACPIds(t *testing.T) {
	rec := [][]Frame{{
		{Dir: pb.Direction_DIRECTION_CLIENT_TO_AGENT, Msg: []byte(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w"}}`)},
		{Dir: pb.Direction_DIRECTION_AGENT_TO_CLIENT, Msg: []byte(`{"jsonrpc":"2.0","id":1,"result":{"sessionId" : "01a23348-1da8-5545"}}`)},
		{Dir: pb.Direction_DIRECTION_AGENT_TO_CLIENT, Msg: []byte(`{"method":"session/update","params":{"sessionId":"01a23348-1da8-5545","update":{"toolCallId":"call_1"}}}`)},
		{Dir: pb.Direction_DIRECTION_AGENT_TO_CLIENT, Msg: []byte(`{"method":"session/update","params":{"sessionId":"x","update":{}}}`)},
	}}
	orig := bytes.Clone(rec[0][2].Msg)
	ids := map[string]int{}
	for _, stream := range []int{0, 7, 255} {
		got := ownACPIds(rec, stream)
		require.Len(t, got[0], 4)
		seen := map[string]bool{}
		for i, f := range got[0] {
			require.Equal(t, rec[0][i].Dir, f.Dir)
			require.Len(t, f.Msg, len(rec[0][i].Msg), "frame %d changed length", i)
			for _, m := range acpSessionID.FindAll(f.Msg, -1) {
				seen[string(m[bytes.LastIndexByte(m[:len(m)-1], '"')+1:len(m)-1])] = true
			}
		}
		require.Len(t, seen, 1, "stream %d: one id in all its frames", stream)
		for id := range seen {
			require.True(t, strings.HasPrefix(id, "01a23348-1da8-55"), id)
			ids[id] = stream
		}
		require.Equal(t, rec[0][0].Msg, got[0][0].Msg, "a frame without an id is unchanged")
		require.Equal(t, rec[0][3].Msg, got[0][3].Msg, "an id of one character is left as it is")
	}
	require.Len(t, ids, 3, "each stream has ids of its own")
	require.Equal(t, orig, rec[0][2].Msg, "the recorded replay is unchanged")
}
