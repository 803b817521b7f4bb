package test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/internal/replay"
	"github.com/acpnorm/acpnorm/normalize"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSessionLoadRecordings plays every recording that loads its session
// again (`session/load`: the agent restarts and replays its history)
// through a Normalizer, twice: with the original calls still held, and
// with them released (their grace passed before the load). Either way each
// call of the original run ends as it did before the load (command,
// outcome, exit code, output): a replay, poorer than the live run, never
// makes a known result worse, a call still held gets no revision from it,
// and a released one gets no FrameError.
func TestSessionLoadRecordings(t *testing.T) {
	files, err := filepath.Glob("testdata/recordings/*_load*.ndjson")
	require.NoError(t, err)
	require.NotEmpty(t, files, "no recording with a session/load")
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			lines, err := replay.ReadFile(file)
			require.NoError(t, err)
			load := -1
			for i, l := range lines {
				if bytes.Contains(l.Msg, []byte(`"method":"session/load"`)) || bytes.Contains(l.Msg, []byte(`"method": "session/load"`)) {
					load = i
					break
				}
			}
			require.GreaterOrEqual(t, load, 0, "no session/load request")
			for _, release := range []bool{false, true} {
				t.Run(fmt.Sprintf("released=%v", release), func(t *testing.T) {
					now := time.Unix(2e9, 0)
					n := normalize.New(normalize.WithClock(func() time.Time { return now }), normalize.WithGrace(time.Second))
					p := &folder{t: t, calls: map[string]*folded{}}
					for _, l := range lines[:load] {
						p.feed(n, l)
					}
					before := p.snapshot()
					revs := p.revs
					if release {
						now = now.Add(time.Minute) // past every grace, within the TTL
						n.Sweep()
					}
					for _, l := range lines[load:] {
						p.feed(n, l)
					}
					assert.Empty(t, p.errs, "frame errors")
					after := p.snapshot()
					for id, b := range before {
						if !b.ended {
							continue // open at the load: its replay may end it
						}
						assert.True(t, notWorse(b, after[id]), "call %s after the replay:\n%s\nwas\n%s", id, after[id], b)
					}
					if strings.HasPrefix(filepath.Base(file), "claude-agent-acp-") {
						// Its replay restates each call exactly: nothing to revise.
						assert.Equal(t, revs, p.revs, "revisions after the load")
					}
				})
			}
		})
	}
}

// folder feeds one session's frames and folds each call as a client does.
type folder struct {
	t     *testing.T
	seq   uint64
	calls map[string]*folded
	errs  []string
	revs  int
}

type folded struct {
	command, outcome, exit, output string
	ended                          bool
}

func (f folded) String() string {
	return fmt.Sprintf("%q %s exit=%s output=%q", f.command, f.outcome, f.exit, clip(f.output))
}

func (p *folder) feed(n *normalize.Normalizer, l replay.Line) {
	p.seq++
	_, err := n.Feed("s", l.Msg, normalize.WithSequence(p.seq), normalize.WithEmit(func(ev normalize.Event) error {
		if ev.Error != nil {
			p.errs = append(p.errs, fmt.Sprintf("line %d: %s", l.Number, ev.Error.Message))
			return nil
		}
		x := ev.ShellExec
		p.revs++
		c := p.calls[x.ToolCallID]
		if c == nil {
			c = &folded{}
			p.calls[x.ToolCallID] = c
		}
		c.command, c.outcome, c.ended = x.Command, x.Outcome.String(), x.State == normalize.StateEnded
		c.exit = "unknown"
		if x.ExitCode != nil {
			c.exit = fmt.Sprint(*x.ExitCode)
		}
		c.output = x.Output.Apply(c.output)
		return nil
	}))
	require.NoError(p.t, err)
}

// notWorse says that what a call ended as before the replay (b) is still
// what it says after it (a): a replay may fill in what was unknown (an
// exit code, output, a command) but never change what was known.
func notWorse(b, a folded) bool {
	same := func(was, now, unknown string) bool { return was == unknown || was == now }
	return same(b.command, a.command, "") && same(b.outcome, a.outcome, "UNKNOWN") &&
		same(b.exit, a.exit, "unknown") && same(b.output, a.output, "") && a.ended
}

func (p *folder) snapshot() map[string]folded {
	out := map[string]folded{}
	for id, c := range p.calls {
		out[id] = *c
	}
	return out
}
