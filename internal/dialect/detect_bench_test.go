package dialect

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// rebuiltSignOfMethod is signOfMethod as it was before the dialect list
// was cached: every call lists the registry, sorts it and builds each
// dialect's Info. It is the baseline of BenchmarkSignOf.
func rebuiltSignOfMethod(method string) string {
	for _, d := range All() {
		if slices.ContainsFunc(d.Info().MethodPrefixes, func(p string) bool { return strings.HasPrefix(method, p) }) {
			return d.Info().Name
		}
	}
	return ""
}

// rebuiltSignOfShape is signOfShape as it was before the cache.
func rebuiltSignOfShape(u *shellUpdate, msg []byte) string {
	for _, d := range All() {
		if m, ok := d.(shapeMatcher); ok && m.matchesShape(u, msg) {
			return d.Info().Name
		}
	}
	return ""
}

// BenchmarkSignOf measures detection by sign as the frames of an agent
// that gave no name pay it: a method no dialect claims (every dialect is
// tried) and a generic tool_call that matches no shape. Each op runs the
// cached lookup and the rebuilt baseline on the same input; it reports
// ns and allocations per lookup of each and the time ratio, measured in
// the same run.
func BenchmarkSignOf(b *testing.B) {
	u := &shellUpdate{}
	cases := []struct {
		name            string
		cached, rebuilt func() string
	}{
		{"method", func() string { return signOfMethod("vendor/unknown") }, func() string { return rebuiltSignOfMethod("vendor/unknown") }},
		{"shape", func() string { return signOfShape(u, nil) }, func() string { return rebuiltSignOfShape(u, nil) }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			if c.cached() != c.rebuilt() {
				b.Fatalf("cached %q, rebuilt %q", c.cached(), c.rebuilt())
			}
			const n = 100
			var cached, rebuilt time.Duration
			for b.Loop() {
				start := time.Now()
				for range n {
					c.rebuilt()
				}
				mid := time.Now()
				for range n {
					c.cached()
				}
				rebuilt += mid.Sub(start)
				cached += time.Since(mid)
			}
			lookups := float64(b.N * n)
			b.ReportMetric(float64(cached.Nanoseconds())/lookups, "cached-ns")
			b.ReportMetric(float64(rebuilt.Nanoseconds())/lookups, "rebuilt-ns")
			b.ReportMetric(float64(cached)/float64(rebuilt), "cached/rebuilt")
			b.ReportMetric(testing.AllocsPerRun(100, func() { c.cached() }), "cached-allocs")
			b.ReportMetric(testing.AllocsPerRun(100, func() { c.rebuilt() }), "rebuilt-allocs")
		})
	}
}
