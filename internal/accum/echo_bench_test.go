package accum

import (
	"testing"
	"time"
)

// BenchmarkCallEcho measures what the echo filter costs a call's live
// output: 1,000 deltas of 64 B and 1,000 cumulative snapshots (up to
// 64 KB) whose output starts with an echo of the command, against the same
// observations on a call whose command is unknown (the filter then does
// nothing). It reports the time of one observation with the filter and
// the ratio to the baseline, measured in the same run.
func BenchmarkCallEcho(b *testing.B) {
	const cmd = "cat notes.txt src/a.go"
	echo := "$ cat /w/notes.txt /w/src/a.go\n"
	line := benchText(64)
	wholes := make([]string, 1000) // the cumulative snapshots, built once
	whole := echo
	for i := range wholes {
		whole += line
		wholes[i] = whole
	}
	for _, kind := range []TextKind{Delta, Snapshot} {
		name := map[TextKind]string{Delta: "delta", Snapshot: "snapshot"}[kind]
		b.Run(name, func(b *testing.B) {
			run := func(command string) time.Duration {
				start := time.Now()
				c := NewCall("c1", benchLimit)
				c.Apply(&Observation{Shell: ShellYes, Command: command, Cwd: "/w", Status: StatusRunning})
				for i := 0; i < 1000; i++ {
					t := Text{Kind: Delta, Text: line}
					if i == 0 {
						t.Text = wholes[0]
					}
					if kind == Snapshot {
						t = Text{Kind: Snapshot, Text: wholes[i]}
					}
					c.Apply(&Observation{Texts: []Text{t}})
					c.Revision()
				}
				return time.Since(start)
			}
			var with, without time.Duration
			for b.Loop() {
				without += run("")
				with += run(cmd)
			}
			b.ReportMetric(float64(with.Nanoseconds())/float64(b.N)/1000, "ns/obs")
			b.ReportMetric(float64(with)/float64(without), "x-baseline")
		})
	}
}
