package redisstore

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/internal/testredis"
	"github.com/acpnorm/acpnorm/store"
)

// BenchmarkCommitAppend is the hot path of an engine with a store: one
// commit per frame that appends 100 bytes of output to a stream and
// rewrites a small call record. The stream is replaced by its last 256 KiB
// once it passes 512 KiB, as the engine's compaction does. Each store runs
// one session from one goroutine (serial: the latency of a commit), the
// same with 300 other streams in the session (wide: a session with many
// calls), then 16 sessions from parallel goroutines (a replica serving
// many sessions).
// It reports ops/s and the p99 latency of a commit, and logs the
// redis/memory ratios of the same run.
//
//	go test -run '^$' -bench CommitAppend ./store/redisstore/
func BenchmarkCommitAppend(b *testing.B) {
	url := testredis.Start(b)
	type result struct{ opsPerSec, p99 float64 }
	results := map[string]result{}
	opens := []struct {
		name string
		open func(b *testing.B) store.Store
	}{
		{"memory", func(*testing.B) store.Store { return store.NewMemory() }},
		{"redis", func(b *testing.B) store.Store {
			s, err := Open(url)
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
	}
	// The floor of any Redis operation here: one PING round trip.
	b.Run("serial/ping", func(b *testing.B) {
		s, err := Open(url)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		for b.Loop() {
			if err := s.c.Ping(b.Context()).Err(); err != nil {
				b.Fatal(err)
			}
		}
		results["ping"] = result{opsPerSec: float64(b.N) / b.Elapsed().Seconds()}
	})
	for _, mode := range []string{"serial", "wide", "parallel"} {
		for _, o := range opens {
			b.Run(mode+"/"+o.name, func(b *testing.B) {
				s := o.open(b)
				defer s.Close()
				var lat []time.Duration
				var start time.Time
				if mode != "parallel" {
					session := fmt.Sprint(mode, "-", time.Now().UnixNano())
					var v uint64
					if mode == "wide" {
						v = widen(b, s, session, 300)
					}
					lat = make([]time.Duration, 0, b.N)
					b.ResetTimer()
					start = time.Now()
					committer(b, s, session, v, b.N, &lat)
				} else {
					lat = parallel(b, s, 16, &start)
				}
				el := time.Since(start)
				b.StopTimer()
				slices.Sort(lat)
				r := result{opsPerSec: float64(b.N) / el.Seconds()}
				if len(lat) > 0 {
					r.p99 = float64(lat[len(lat)*99/100]) / float64(time.Microsecond)
				}
				b.ReportMetric(r.opsPerSec, "ops/s")
				b.ReportMetric(r.p99, "p99-µs")
				results[mode+"/"+o.name] = r
			})
		}
		m, r := results[mode+"/memory"], results[mode+"/redis"]
		if m.opsPerSec > 0 && r.opsPerSec > 0 {
			fmt.Printf("CommitAppend %s: redis/memory throughput %.3f (%.0f vs %.0f ops/s); p99 %.0f µs vs %.1f µs\n",
				mode, r.opsPerSec/m.opsPerSec, r.opsPerSec, m.opsPerSec, r.p99, m.p99)
		}
	}
	if p, r := results["ping"], results["serial/redis"]; p.opsPerSec > 0 && r.opsPerSec > 0 {
		fmt.Printf("CommitAppend: a serial redis commit costs %.2f PING round trips\n", p.opsPerSec/r.opsPerSec)
	}
}

// committer makes n commits to session, appending each one's latency to lat.
func committer(b *testing.B, s store.Store, session string, v uint64, n int, lat *[]time.Duration) {
	ctx := b.Context()
	out := bytes.Repeat([]byte("x"), 99)
	out = append(out, '\n')
	record := bytes.Repeat([]byte("r"), 48)
	held := 0
	for range n {
		op := store.StreamOp{Name: "c1/0", Data: out, Append: true}
		if held+len(out) > 512<<10 {
			op = store.StreamOp{Name: "c1/0", Data: bytes.Repeat(out, (256<<10)/len(out))}
			held = 0
		}
		held += len(op.Data)
		t0 := time.Now()
		nv, err := s.Commit(ctx, session, v, &store.Change{Records: map[string][]byte{"c1": record}, Streams: []store.StreamOp{op}, TTL: time.Hour})
		*lat = append(*lat, time.Since(t0))
		if err != nil {
			b.Error(err) // not Fatal: parallel runs this off the benchmark's goroutine
			return
		}
		v = nv
	}
}

// widen gives session n streams of 1 KiB and n small records besides the
// one the committer writes, as a session with many calls (open, or ended
// within their grace) has, and returns its version.
func widen(b *testing.B, s store.Store, session string, n int) uint64 {
	c := &store.Change{Records: map[string][]byte{}, TTL: time.Hour}
	for i := range n {
		c.Records[fmt.Sprint("w", i)] = bytes.Repeat([]byte("r"), 48)
		c.Streams = append(c.Streams, store.StreamOp{Name: fmt.Sprintf("w%d/0", i), Data: bytes.Repeat([]byte("o"), 1024)})
	}
	v, err := s.Commit(b.Context(), session, 0, c)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// parallel makes b.N commits spread over g goroutines, one session each,
// and returns every commit's latency.
func parallel(b *testing.B, s store.Store, g int, start *time.Time) []time.Duration {
	var (
		wg   sync.WaitGroup
		next atomic.Int64
		mu   sync.Mutex
		all  []time.Duration
	)
	run := fmt.Sprint(time.Now().UnixNano())
	per := (b.N + g - 1) / g
	b.ResetTimer()
	*start = time.Now()
	for i := range g {
		n := min(per, b.N-i*per)
		if n <= 0 {
			break
		}
		wg.Go(func() {
			lat := make([]time.Duration, 0, n)
			committer(b, s, fmt.Sprintf("par-%s-%d", run, next.Add(1)), 0, n, &lat)
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return all
}
