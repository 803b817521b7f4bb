package accum

import (
	"fmt"
	"testing"
)

// revisionRules checks, one revision after another, the rules a call's
// revisions keep whatever is folded into it:
//   - revisions are numbered 1, 2, 3, ...: they never restart nor skip;
//   - an Ended revision has an outcome, a live one has none;
//   - ENDED is final: every revision after an Ended one is Ended, and
//     keeps a known outcome and a known exit code;
//   - a known nonzero exit code is never SUCCEEDED: it is FAILED, or
//     CANCELLED when the user cancelled;
//   - a known exit code is never lost: once exit evidence came while the
//     outcome was still open, every Ended revision carries an exit code
//     (a cancelled call keeps it).
//
// The judge is independent of the call's code: exit evidence is an exit
// that is not a placeholder and is not a 0 beside a signal on the same
// observation. Observations whose exit a call may rightly set aside are left
// out: in the background, replayed, or read from words that a later frame
// may say were output (Observation.ExitWordsOutput).
type revisionRules struct {
	taken     uint32
	ended     *Revision // the latest Ended revision
	exitKnown bool
}

// before notes what o tells c, before c applies it.
func (rr *revisionRules) before(c *Call, o *Observation) {
	e := o.Exit
	if e == nil || e.Placeholder || (e.Code == 0 && o.Signal != "") || o.Background || o.Replayed || o.Worded.Exit || c.cur.background {
		return
	}
	if !c.settled() {
		rr.exitKnown = true
	}
}

func (rr *revisionRules) check(t *testing.T, r Revision) {
	t.Helper()
	rr.taken++
	if r.Number != rr.taken {
		t.Fatalf("revision number %d, but it is the call's revision %d: numbers restart or skip", r.Number, rr.taken)
	}
	if (r.State == Ended) != (r.Outcome != OutcomeNone) {
		t.Fatalf("revision %d: state %v with outcome %v", r.Number, r.State, r.Outcome)
	}
	nonzero := r.ExitCode != nil && *r.ExitCode != 0
	if nonzero && r.Outcome != OutcomeNone && r.Outcome != Failed && r.Outcome != Cancelled {
		t.Fatalf("revision %d: exit code %d, outcome %v (%s)", r.Number, *r.ExitCode, r.Outcome, r.OutcomeReason)
	}
	if r.State == Ended && rr.exitKnown && r.ExitCode == nil {
		t.Fatalf("revision %d: ended %v (%s) without the exit code that came", r.Number, r.Outcome, r.OutcomeReason)
	}
	if p := rr.ended; p != nil {
		if r.State != Ended {
			t.Fatalf("revision %d: %v after an Ended revision %d", r.Number, r.State, p.Number)
		}
		if p.Outcome != Unknown && r.Outcome != p.Outcome {
			t.Fatalf("revision %d: outcome %v (%s) after %v (%s) on Ended revision %d", r.Number, r.Outcome, r.OutcomeReason, p.Outcome, p.OutcomeReason, p.Number)
		}
		if p.ExitCode != nil && (r.ExitCode == nil || *r.ExitCode != *p.ExitCode) {
			now := "none"
			if r.ExitCode != nil {
				now = fmt.Sprint(*r.ExitCode)
			}
			t.Fatalf("revision %d: exit code %s after %d on Ended revision %d", r.Number, now, *p.ExitCode, p.Number)
		}
	}
	if r.State == Ended {
		cp := r
		rr.ended = &cp
	}
}
