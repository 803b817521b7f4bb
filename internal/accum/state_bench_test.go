package accum

import (
	"fmt"
	"testing"
	"time"
)

// streamingCall is a call's live life for the state benchmarks: 1,000
// deltas of n bytes (64 KiB or 1 MiB of output at the service's default
// limit of 256 KiB), a revision after each (the apply), then what the
// engine does to store the call (the step: TakeSync, AppendState or
// both). Each is timed on its own, next to each other, so that a busy
// machine slows both alike; the clock reads (some 50 ns) count in each.
// It returns the two times, the bytes TakeSync handed out, and the bytes
// that storing the whole held text after every delta would have sent.
func streamingCall(deltas []Observation, sync, state bool) (apply, step time.Duration, synced, whole int) {
	var buf []byte
	c := NewCall("call-0001", benchLimit)
	c.Apply(&Observation{Shell: ShellYes, Command: "make all", Cwd: "/w/project", Description: "build the workspace", Status: StatusRunning})
	for i := range deltas {
		t0 := time.Now()
		c.Apply(&deltas[i])
		c.Revision()
		t1 := time.Now()
		if sync {
			for _, y := range c.TakeSync() {
				synced += len(y.Data)
			}
		}
		if state {
			buf = c.AppendState(buf[:0])
		}
		t2 := time.Now()
		apply += t1.Sub(t0)
		step += t2.Sub(t1)
		whole += len(c.streams[Combined].held())
	}
	return apply, step, synced, whole
}

func benchDeltas(n int) []Observation {
	out := make([]Observation, 1000)
	text := benchText(n * len(out))
	for i := range out {
		out[i] = Observation{Texts: []Text{{Kind: Delta, Text: text[i*n : (i+1)*n]}}}
	}
	return out
}

// benchStore reports the storing step's cost per observation and its
// ratio to applying the observation, measured in the same run.
func benchStore(b *testing.B, sync, state bool) {
	for _, n := range []int{64, 1 << 10} {
		b.Run(fmt.Sprintf("delta=%dB", n), func(b *testing.B) {
			deltas := benchDeltas(n)
			var apply, step time.Duration
			synced, whole := 0, 0
			for b.Loop() {
				a, s, y, w := streamingCall(deltas, sync, state)
				apply, step, synced, whole = apply+a, step+s, synced+y, whole+w
			}
			obs := float64(b.N * len(deltas))
			b.ReportMetric(float64(apply.Nanoseconds())/obs, "apply-ns/obs")
			b.ReportMetric(float64(step.Nanoseconds())/obs, "step-ns/obs")
			b.ReportMetric(float64(step)/float64(apply), "step/apply")
			if sync {
				b.ReportMetric(float64(synced)/(obs*float64(n)), "synced/real")
				b.ReportMetric(float64(whole)/(obs*float64(n)), "whole/real")
			}
		})
	}
}

// BenchmarkTakeSync: TakeSync after every live delta. synced/real is the
// bytes handed to the store per byte of output: 1 while the stream fits,
// about 2 once compaction (a Replace every limit bytes) sets in;
// whole/real is the baseline of storing the whole held text every time.
func BenchmarkTakeSync(b *testing.B) { benchStore(b, true, false) }

// BenchmarkAppendState: AppendState after every live delta, into a
// reused buffer.
func BenchmarkAppendState(b *testing.B) { benchStore(b, false, true) }

// BenchmarkStoreStep: both, as the engine does on every commit.
func BenchmarkStoreStep(b *testing.B) { benchStore(b, true, true) }

// BenchmarkRestoreCall: restoring a call that holds a full 256 KiB
// stream (what a replica pays once to take over a call).
func BenchmarkRestoreCall(b *testing.B) {
	c := NewCall("call-0001", benchLimit)
	c.Apply(&Observation{Shell: ShellYes, Command: "make all", Status: StatusRunning})
	var st simStore
	for _, o := range benchDeltas(1 << 10) {
		c.Apply(&o)
		st.apply(c.TakeSync())
	}
	state := c.AppendState(nil)
	b.SetBytes(int64(len(c.streams[Combined].held())))
	for b.Loop() {
		if _, err := RestoreCall(state, st); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(state)), "state-bytes")
}
