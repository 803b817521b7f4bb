package normalize_test

import (
	"context"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/normalize"
	"github.com/acpnorm/acpnorm/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keyOf is the memory store, remembering the key of the session last
// committed.
type keyOf struct {
	store.Store
	key string
}

func (k *keyOf) Commit(ctx context.Context, session string, base uint64, c *store.Change) (uint64, error) {
	k.key = session
	return k.Store.Commit(ctx, session, base, c)
}

// The answers kept for frames sent again are bounded per session (the
// last 64 frames, within 256 KiB) in the store itself, whatever the
// client sends: here batches of frames (one commit each, as a stream
// with a store applies the frames it has read of one session) whose
// answers are each large, so that one batch passes the bytes bound by
// itself. No answer record is left in the store past the bounds.
func TestHostileAnswersKeptInTheStoreStayBounded(t *testing.T) {
	for _, c := range []struct {
		name                string
		batches, frames, kb int
	}{
		{"small frames, many", 20, 8, 1},
		{"large frames", 10, 8, 100},
		{"one frame each, large", 10, 1, 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := &keyOf{Store: store.NewMemory()}
			n := normalize.New(normalize.WithStore(st))
			seq := uint64(1)
			_, err := n.FeedBatch("S", []normalize.Frame{{Message: nsOpen("c1", "yes"), Sequence: seq}}, normalize.WithSkipApplied())
			require.NoError(t, err)
			data := strings.Repeat("y", c.kb<<10)
			for range c.batches {
				var frames []normalize.Frame
				for range c.frames {
					seq++
					frames = append(frames, normalize.Frame{Message: nsDelta("c1", data), Sequence: seq})
				}
				execs, err := n.FeedBatch("S", frames, normalize.WithSkipApplied())
				require.NoError(t, err)
				require.Len(t, execs, c.frames)
			}
			snap, err := st.Load(context.Background(), st.key)
			require.NoError(t, err)
			count, bytes := 0, 0
			for name, rec := range snap.Records {
				if strings.HasPrefix(name, "a:") {
					count++
					bytes += len(rec)
				}
			}
			assert.LessOrEqual(t, count, 64, "answer records in the store")
			assert.LessOrEqual(t, bytes, 256<<10, "bytes of answer records in the store (%d records)", count)
			assert.Positive(t, count, "the latest answers are kept")
		})
	}
}
