package normalize

import "testing"

// The default budget is a quarter of what the machine (or cgroup) has.
func TestDefaultMemoryBudget(t *testing.T) {
	b := DefaultMemoryBudget()
	if b <= 0 {
		t.Fatalf("default budget %d", b)
	}
	if mem := memTotal(); mem > 0 && int64(b) > mem/4 {
		t.Fatalf("default budget %d is over a quarter of MemTotal %d", b, mem)
	}
	if lim := cgroupLimit(); lim > 0 && int64(b) > lim/4 {
		t.Fatalf("default budget %d is over a quarter of the cgroup limit %d", b, lim)
	}
}
