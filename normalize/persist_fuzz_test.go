package normalize_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/acpnorm/acpnorm/normalize"
	"github.com/acpnorm/acpnorm/store"
	"github.com/stretchr/testify/require"
)

// FuzzStoredSession: whatever another writer left in the store as a
// session's header and call record, using the session never panics, and
// either works or is refused with Unavailable while the Normalizer's
// counts stay whole.
func FuzzStoredSession(f *testing.F) {
	// Seeds: the real header and records of a session in the middle of
	// the recording.
	st := store.NewMemory()
	n := normalize.New(normalize.WithStore(st))
	fs := frames(recording)
	for _, fr := range fs[:20] {
		n.Feed("s", fr)
	}
	snap, err := st.Load(context.Background(), "s")
	require.NoError(f, err)
	for name, rec := range snap.Records {
		f.Add(snap.Header, name, rec)
	}
	f.Add([]byte{1}, "c:x", []byte{1})
	f.Fuzz(func(t *testing.T, header []byte, name string, record []byte) {
		st := store.NewMemory()
		if _, err := st.Commit(context.Background(), "s", 0, &store.Change{Header: header, Records: map[string][]byte{name: record}, TTL: time.Hour}); err != nil {
			t.Skip(err)
		}
		n := normalize.New(normalize.WithStore(st))
		for _, fr := range fs[20:24] {
			_, err := n.Feed("s", fr)
			if err != nil && !isFrameError(err) {
				t.Fatalf("feeding a stored session: %v", err)
			}
		}
		if s := n.Stats(); s.Calls < 0 || s.HeldBytes < 0 || s.Sessions < 0 {
			t.Fatalf("counts after a stored session: %+v", s)
		}
	})
}

func isFrameError(err error) bool {
	var fe *normalize.FrameError
	return errors.As(err, &fe)
}
