package test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// recordingBuild reads the build out of a harness recording's name,
// <id>-<version>[+<tag>]_<variant>_<scenario> (an id may hold hyphens and
// digits: codex-acp2). A tag names the agent an adapter build runs, where
// it is not the one its newest build pins: "+pi.1.0.3", pi 1.0.3 under
// pi-acp (the harness's pkgs/pi-acp@0.0.34+pi.1.0.3).
var recordingBuild = regexp.MustCompile(`^(.+?)-(\d+\.\d+\.\d+[^_+]*)(?:\+([^_]+))?_`)

// tagBuild reads the agent's build a tag names ("pi.1.0.3": "pi v1.0.3")
// as the adapter names it on its wire: pi-acp in its session/new result,
// the first line of _meta.piAcp.startupInfo.
var tagBuild = map[string]func(tag string) string{
	"pi-acp": func(tag string) string {
		v, ok := strings.CutPrefix(tag, "pi.")
		if !ok {
			return ""
		}
		return "pi v" + v
	},
}

// TestRecordingIsItsBuild holds every committed agent recording to the
// build its name says, where the agent names itself: each initialize
// answer's agentInfo.version (the Claude and Codex adapters and pi-acp name
// the adapter's own version, which is the package the harness pins; Grok
// names none). npm drops an optional platform package the registry lacks
// without a word, and the harness once ran the newest build's hoisted
// binary under an older build's name (opencode-1.17.15 said 1.18.33): the
// goldens and docs then describe a build that never ran.
//
// A tagged recording is also held to the agent build its tag names, as
// its adapter names it: each session/new answer must name it.
func TestRecordingIsItsBuild(t *testing.T) {
	for _, f := range recordingsIn(t, "testdata/recordings/agents") {
		m := recordingBuild.FindStringSubmatch(filepath.Base(f))
		require.NotNil(t, m, "%s: not named <id>-<version>_<variant>_<scenario>", filepath.Base(f))
		wantTag := ""
		if m[3] != "" {
			named := tagBuild[m[1]]
			require.NotNil(t, named, "%s: %s names no agent build in a tag", filepath.Base(f), m[1])
			wantTag = named(m[3])
			require.NotEmpty(t, wantTag, "%s: the tag %s names no build of %s's agent", filepath.Base(f), m[3], m[1])
		}
		sessions := 0
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
						SessionID string `json:"sessionId"`
						Meta      struct {
							PiAcp struct {
								StartupInfo *string `json:"startupInfo"`
							} `json:"piAcp"`
						} `json:"_meta"`
					} `json:"result"`
				} `json:"msg"`
			}
			if json.Unmarshal(sc.Bytes(), &r) != nil || r.Dir != "agent->client" {
				continue
			}
			if wantTag != "" && r.Msg.Result.SessionID != "" {
				sessions++
				info := r.Msg.Result.Meta.PiAcp.StartupInfo
				got := "nothing"
				if info != nil {
					got, _, _ = strings.Cut(*info, "\n")
				}
				if got != wantTag {
					t.Errorf("%s: tagged %s, but its session/new names %q", filepath.Base(f), m[3], got)
				}
			}
			if r.Msg.Result.AgentInfo == nil {
				continue
			}
			if v := r.Msg.Result.AgentInfo.Version; v != "" && v != m[2] {
				t.Errorf("%s: named %s %s, but the agent says it is %s %s", filepath.Base(f), m[1], m[2], r.Msg.Result.AgentInfo.Name, v)
			}
		}
		require.NoError(t, sc.Err(), f)
		if wantTag != "" && sessions == 0 {
			t.Errorf("%s: tagged %s, but no session/new answer names the build", filepath.Base(f), m[3])
		}
		require.NoError(t, fh.Close())
	}
}
