package service

import (
	"fmt"
	"testing"
)

// BenchmarkDelivered is what a stream's record of what it carried costs
// per revision sent (needsWhole when the revision is made, handedOn when
// it is handed on), on revisions of 64 open calls in turn, with session
// and call ids as long as an agent's (a UUID and a tool call id).
//
//	go test ./internal/service -run '^$' -bench BenchmarkDelivered
func BenchmarkDelivered(b *testing.B) {
	const calls = 64
	sessions := make([]string, calls)
	ids := make([]string, calls)
	for i := range calls {
		sessions[i] = fmt.Sprintf("9f1c2a4e-7b3d-4e8a-9c61-%012d", i%4)
		ids[i] = fmt.Sprintf("toolu_01ABCDEFGHJKLMNPQRSTUV%04d", i)
	}
	d := newDelivered()
	revs := make([]uint32, calls)
	i := 0
	for b.Loop() {
		c := i % calls
		i++
		revs[c]++
		d.needsWhole(sessions[c], ids[c], revs[c], false)
		d.handedOn(sessions[c], ids[c], revs[c])
	}
}
