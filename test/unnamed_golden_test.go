package test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/internal/replay"
)

// unsignedGolden are the recordings (by the start of their file name)
// whose agent, without its agentInfo.name, shows no sign of its dialect:
// the generic dialect reads them.
var unsignedGolden = []string{
	// Copilot 0.0.399 offers no auth method (copilot-login came with
	// 0.0.401) and sends nothing only Copilot sends.
	"copilot-0.0.399_",
}

// TestGoldenWithoutAgentName replays every recording with agentInfo.name
// removed from its initialize results (ACP makes agentInfo optional;
// agentInfo.version stays) and compares the rendering with the
// recording's own golden: an agent that names nothing but shows a sign of
// its dialect (an auth method id only it offers, Claude's
// _meta.claudeCode) reads exactly as when it named itself. On main every
// Claude, Codex, Gemini, OpenCode, Kilo, Qwen and Droid recording read as
// generic: claude-agent-acp's made-up terminal_exit believed for a
// JetBrains AIR client, Codex's `bash -lc` wrapper kept. The recordings
// unsignedGolden lists are read as generic.
func TestGoldenWithoutAgentName(t *testing.T) {
	for _, dir := range []string{"testdata/recordings", "testdata/recordings/agents"} {
		c := inProcess(t) // one service a directory, as TestGolden*: their names repeat
		goldenDir := filepath.Join("testdata", "golden", strings.TrimPrefix(dir, "testdata/recordings"))
		for _, file := range recordingsIn(t, dir) {
			name := strings.TrimSuffix(filepath.Base(file), ".ndjson")
			t.Run(name, func(t *testing.T) {
				lines := readLines(t, file)
				stripped := false
				for i := range lines {
					var s bool
					lines[i].Msg, s = withoutAgentName(t, lines[i].Msg)
					stripped = stripped || s
				}
				if !stripped {
					t.Skip("the agent names nothing (Grok)")
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				resps, err := replay.Play(ctx, c, lines, replay.Options{SessionID: name, Dialect: "auto"})
				if err != nil {
					t.Fatal(err)
				}
				checkRevisions(t, resps)
				for _, p := range unsignedGolden {
					if strings.HasPrefix(name+".", p) {
						for _, r := range resps {
							if x := r.GetShellExec(); x != nil && x.GetDialect() != "generic" {
								t.Fatalf("%s read by %s, want generic (no sign)", x.GetToolCallId(), x.GetDialect())
							}
						}
						return
					}
				}
				want, err := os.ReadFile(filepath.Join(goldenDir, name+".golden"))
				if err != nil {
					t.Fatal(err)
				}
				if got := render(name, resps); !bytes.Equal(got, want) {
					t.Errorf("without agentInfo.name, %s reads otherwise than its golden:\n%s", name, firstDiff(string(want), string(got)))
				}
			})
		}
	}
}

// withoutAgentName returns msg without `agentInfo.name` when it is a
// result that gives one (every other member as it was), and whether it
// was.
func withoutAgentName(t *testing.T, msg []byte) ([]byte, bool) {
	t.Helper()
	if !bytes.Contains(msg, []byte(`"agentInfo"`)) {
		return msg, false
	}
	var m, r, ai map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil || json.Unmarshal(m["result"], &r) != nil || json.Unmarshal(r["agentInfo"], &ai) != nil {
		return msg, false
	}
	if _, ok := ai["name"]; !ok {
		return msg, false
	}
	delete(ai, "name")
	var err error
	if r["agentInfo"], err = json.Marshal(ai); err != nil {
		t.Fatal(err)
	}
	if m["result"], err = json.Marshal(r); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out, true
}
