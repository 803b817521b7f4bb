package normalize_test

import (
	"fmt"
	"testing"

	"github.com/acpnorm/acpnorm/internal/testredis"
	"github.com/acpnorm/acpnorm/normalize"
	"github.com/acpnorm/acpnorm/store"
	"github.com/acpnorm/acpnorm/store/redisstore"
	"github.com/stretchr/testify/require"
)

// BenchmarkFeedStore feeds the recording, a fresh session per replay, to a
// Normalizer without a store, with the in-process store (what the engine's
// side of storing costs: encoding, syncing, committing) and with a real
// redis-server (adding the round trips). Compare ns/op between them.
func BenchmarkFeedStore(b *testing.B) {
	fs := frames(recording)
	run := func(b *testing.B, n *normalize.Normalizer, opts ...normalize.FeedOption) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			id := fmt.Sprint("s", i)
			for j, f := range fs {
				if _, err := n.Feed(id, f, append(opts, normalize.WithSequence(uint64(j+1)))...); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := n.CloseSession(id); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(fs)), "ns/frame")
	}
	b.Run("none", func(b *testing.B) { run(b, normalize.New()) })
	b.Run("memory", func(b *testing.B) { run(b, normalize.New(normalize.WithStore(store.NewMemory()))) })
	b.Run("redis", func(b *testing.B) {
		st, err := redisstore.Open(testredis.Start(b))
		require.NoError(b, err)
		defer st.Close()
		run(b, normalize.New(normalize.WithStore(st)))
	})
	// With skipped applied sequences each frame's answer is committed
	// with it (see WithSkipApplied): what that adds to a frame.
	b.Run("redis-skip", func(b *testing.B) {
		st, err := redisstore.Open(testredis.Start(b))
		require.NoError(b, err)
		defer st.Close()
		run(b, normalize.New(normalize.WithStore(st)), normalize.WithSkipApplied())
	})
}
