package normalize

import (
	"fmt"
	"testing"

	"github.com/acpnorm/acpnorm/internal/benchcpu"
)

// BenchmarkTombstones is what the tombstones cost a call in a load that
// opens sessions and closes them (acpbench's): the check for a tombstone
// when the call opens, and its own when its session closes, with the
// tombstones full at DefaultTombstones (each new one evicts the oldest).
// Sessions of 16 calls; ids as long as an agent's.
//
//	go test ./normalize -run '^$' -bench BenchmarkTombstones -benchtime 3000000x
func BenchmarkTombstones(b *testing.B) {
	const calls = 16
	ts := newTombstones(DefaultTombstones)
	ns := newNamespace("")
	session := func(i int) string { return ns.key(fmt.Sprintf("ses_%026d", i)) }
	call := func(j int) string { return fmt.Sprintf("toolu_01%024d", j) }
	ids := make([]string, calls)
	for j := range ids {
		ids[j] = call(j)
	}
	n := 0
	for ts.len() < DefaultTombstones { // full, as after a while
		s := session(n)
		n++
		for _, id := range ids {
			ts.add(s, id, tomb{why: releasedClosed, revisions: 4})
		}
	}
	// Sessions again after 65536 of them, when the tombstones (4096
	// sessions' worth) long forgot them: every check is a miss.
	sessions := make([]string, 1<<16)
	for i := range sessions {
		sessions[i] = session(n + i)
	}
	b.ReportAllocs()
	cpu := benchcpu.Now()
	i := 0
	for b.Loop() {
		s, j := sessions[(i/calls)%len(sessions)], i%calls
		if _, ok := ts.get(s, ids[j]); ok {
			b.Fatal("a call of a session forgotten has a tombstone")
		}
		if j == calls-1 {
			for _, id := range ids {
				ts.add(s, id, tomb{why: releasedClosed, revisions: 4})
			}
		}
		i++
	}
	benchcpu.Report(b, cpu)
}
