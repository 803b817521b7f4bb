package accum

import "testing"

// FuzzCallNeverInventsSuccess folds arbitrary sequences of observations,
// each built from three fuzzed bytes, into a call and checks, at every
// revision, the rule no dialect can break: a call for which any
// observation reported a signal, a timeout or a failed verdict before it
// ended with a known outcome is never SUCCEEDED, and an exit code of 0 that came only in an observation with a
// signal is never reported.
func FuzzCallNeverInventsSuccess(f *testing.F) {
	f.Add([]byte{0x13, 0x00, 0x01})                   // completed, exit 0, SIGKILL
	f.Add([]byte{0x02, 0x00, 0x00, 0x13, 0x00, 0x02}) // running, then completed with a timeout
	f.Add([]byte{0x14, 0x01, 0x04})                   // failed, exit 1, failed verdict
	f.Add([]byte{0x13, 0x80, 0x00, 0x00, 0x00, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		c := NewCall("c", 64)
		var bad, zeroOnlyWithSignal, zeroElsewhere bool
		var rules revisionRules
		check := func() {
			r, ok := c.Revision()
			if !ok {
				return
			}
			rules.check(t, r)
			if bad && r.Outcome == Succeeded {
				t.Fatalf("SUCCEEDED (%s) after a signal, timeout or failed verdict", r.OutcomeReason)
			}
			if zeroOnlyWithSignal && !zeroElsewhere && r.ExitCode != nil && *r.ExitCode == 0 {
				t.Fatalf("exit code 0 reported, but every 0 came beside a signal")
			}
		}
		for i := 0; i+3 <= len(data) && i < 3*64; i += 3 {
			a, code, flags := data[i], data[i+1], data[i+2]
			o := Observation{Shell: ShellYes, Status: Status(a & 7 % 5)}
			if a&0x10 != 0 {
				o.Exit = &Exit{Code: int32(code & 3), Source: ExitSource(1 + a>>5&3), Placeholder: a&0x80 != 0}
			}
			if flags&1 != 0 {
				o.Signal = "SIGKILL"
			}
			o.TimedOut = flags&2 != 0
			o.Verdict = Verdict(flags >> 2 & 1)
			o.Cancelled = flags&0x10 != 0
			o.Succeeded = flags&0x20 != 0
			o.Failed = flags&0x40 != 0
			// A known outcome is final: evidence that arrives after it
			// cannot change it.
			if !c.settled() && (o.Signal != "" || o.TimedOut || o.Verdict == VerdictFailed) {
				bad = true
			}
			if o.Exit != nil && !o.Exit.Placeholder && o.Exit.Code == 0 {
				if o.Signal != "" {
					zeroOnlyWithSignal = true
				} else {
					zeroElsewhere = true
				}
			}
			rules.before(c, &o)
			c.Apply(&o)
			check()
			if flags&0x80 != 0 {
				c.End(flags&0x10 != 0, "ended")
				check()
			}
		}
		c.End(false, "ended")
		check()
	})
}
