package normalize_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/normalize"
	"github.com/acpnorm/acpnorm/store"
	"github.com/stretchr/testify/require"
)

// FuzzStoredSession: whatever another writer left in the store as a
// session's header and call record, using the session never panics, and
// either works or is refused with Unavailable while the Normalizer's
// counts stay whole.
func FuzzStoredSession(f *testing.F) {
	// Seeds: the real header and records of a session in the middle of
	// the recording.
	st := store.NewMemory()
	n := normalize.New(normalize.WithStore(st))
	fs := frames(recording)
	for _, fr := range fs[:20] {
		n.Feed("s", fr)
	}
	snap, err := st.Load(context.Background(), "s")
	require.NoError(f, err)
	for name, rec := range snap.Records {
		f.Add(snap.Header, name, rec)
	}
	f.Add([]byte{1}, "c:x", []byte{1})
	f.Fuzz(func(t *testing.T, header []byte, name string, record []byte) {
		st := store.NewMemory()
		if _, err := st.Commit(context.Background(), "s", 0, &store.Change{Header: header, Records: map[string][]byte{name: record}, TTL: time.Hour}); err != nil {
			t.Skip(err)
		}
		// What the session shows keeps its rules whatever was stored,
		// also across a load by another Normalizer (the second feeds the
		// frames that end the call).
		var rules execRules
		for i, n := range []*normalize.Normalizer{normalize.New(normalize.WithStore(st)), normalize.New(normalize.WithStore(st))} {
			for _, fr := range fs[20+8*i : 28+8*i] {
				execs, err := n.Feed("s", fr)
				if err != nil && !isFrameError(err) {
					t.Fatalf("feeding a stored session: %v", err)
				}
				rules.check(t, execs)
			}
			if s := n.Stats(); s.Calls < 0 || s.HeldBytes < 0 || s.Sessions < 0 {
				t.Fatalf("counts after a stored session: %+v", s)
			}
		}
	})
}

// execRules checks the revisions of each call, one after another: their
// numbers go up by one (no restart, no gap), and ENDED is final: every revision
// after an ENDED one is ENDED, keeps a known outcome and a known exit code.
type execRules map[string]*normalize.ShellExec

func (rs *execRules) check(t *testing.T, execs []*normalize.ShellExec) {
	t.Helper()
	if *rs == nil {
		*rs = map[string]*normalize.ShellExec{}
	}
	for _, x := range execs {
		key := x.SessionID + "\x00" + x.ToolCallID
		p := (*rs)[key]
		(*rs)[key] = x
		if p == nil {
			continue
		}
		if x.Revision != p.Revision+1 {
			t.Fatalf("%q: revision %d after %d: a restart or a gap", x.ToolCallID, x.Revision, p.Revision)
		}
		if p.State != normalize.StateEnded {
			continue
		}
		if x.State != normalize.StateEnded {
			t.Fatalf("%q: revision %d is %v after the ENDED revision %d", x.ToolCallID, x.Revision, x.State, p.Revision)
		}
		if p.Outcome != normalize.Unknown && x.Outcome != p.Outcome {
			t.Fatalf("%q: revision %d is %v after %v on the ENDED revision %d", x.ToolCallID, x.Revision, x.Outcome, p.Outcome, p.Revision)
		}
		if p.ExitCode != nil && (x.ExitCode == nil || *x.ExitCode != *p.ExitCode) {
			t.Fatalf("%q: revision %d lost the exit code %d of the ENDED revision %d", x.ToolCallID, x.Revision, *p.ExitCode, p.Revision)
		}
	}
}

func isFrameError(err error) bool {
	var fe *normalize.FrameError
	return errors.As(err, &fe)
}
