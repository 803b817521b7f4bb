// Package benchcpu measures the CPU time a benchmark uses, for the
// benchmarks of several packages. On a machine shared with other work,
// CPU time per op is steadier than ns/op, which also counts the time spent
// waiting for a core.
package benchcpu

import (
	"syscall"
	"testing"
	"time"
)

// Now returns the CPU time this process has used so far, user and system
// (0 when the system does not say).
func Now() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Report adds cpu-ns/op to b: the process's CPU time per op since start
// (a value of Now taken before the loop), garbage collection included.
func Report(b *testing.B, start time.Duration) {
	if b.N > 0 {
		b.ReportMetric(float64(Now()-start)/float64(b.N), "cpu-ns/op")
	}
}
