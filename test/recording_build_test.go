package test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// recordingBuild reads the build out of a harness recording's name,
// <id>-<version>_<variant>_<scenario> (an id may hold hyphens and digits:
// codex-acp2).
var recordingBuild = regexp.MustCompile(`^(.+?)-(\d+\.\d+\.\d+[^_]*)_`)

// TestRecordingIsItsBuild holds every committed agent recording to the
// build its name says, where the agent names itself: each initialize
// answer's agentInfo.version (the Claude and Codex adapters and pi-acp name
// the adapter's own version, which is the package the harness pins; Grok
// names none). npm drops an optional platform package the registry lacks
// without a word, and the harness once ran the newest build's hoisted
// binary under an older build's name (opencode-1.17.15 said 1.18.33): the
// goldens and docs then describe a build that never ran.
func TestRecordingIsItsBuild(t *testing.T) {
	for _, f := range recordingsIn(t, "testdata/recordings/agents") {
		m := recordingBuild.FindStringSubmatch(filepath.Base(f))
		require.NotNil(t, m, "%s: not named <id>-<version>_<variant>_<scenario>", filepath.Base(f))
		fh, err := os.Open(f)
		require.NoError(t, err)
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var r struct {
				Dir string `json:"dir"`
				Msg struct {
					Result struct {
						AgentInfo *struct {
							Name    string `json:"name"`
							Version string `json:"version"`
						} `json:"agentInfo"`
					} `json:"result"`
				} `json:"msg"`
			}
			if json.Unmarshal(sc.Bytes(), &r) != nil || r.Dir != "agent->client" || r.Msg.Result.AgentInfo == nil {
				continue
			}
			if v := r.Msg.Result.AgentInfo.Version; v != "" && v != m[2] {
				t.Errorf("%s: named %s %s, but the agent says it is %s %s", filepath.Base(f), m[1], m[2], r.Msg.Result.AgentInfo.Name, v)
			}
		}
		require.NoError(t, sc.Err(), f)
		require.NoError(t, fh.Close())
	}
}
