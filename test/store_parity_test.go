package test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acpnorm/acpnorm/internal/testredis"
	"github.com/acpnorm/acpnorm/normalize"
	"github.com/acpnorm/acpnorm/store"
	"github.com/acpnorm/acpnorm/store/redisstore"
)

// embedded feeds a recording's frames to the Normalizers in turn (frame i
// to replicas[i%len]; with batch > 1, FeedBatch's batches of that many
// frames from frame i), closes the session, and returns every event.
func embedded(t *testing.T, file, id string, batch int, replicas ...*normalize.Normalizer) []string {
	t.Helper()
	var out []string
	emit := normalize.WithEmit(func(ev normalize.Event) error {
		out = append(out, describeEvent(ev))
		return nil
	})
	var last uint64
	lines := readLines(t, file)
	for i := 0; i < len(lines); {
		n := replicas[i%len(replicas)]
		if batch <= 1 {
			last = uint64(lines[i].Number)
			if _, err := n.Feed(id, lines[i].Msg, normalize.WithDialect("auto"), normalize.WithSequence(last), emit); err != nil {
				t.Fatal(err)
			}
			i++
			continue
		}
		var frames []normalize.Frame
		for _, l := range lines[i:min(i+batch, len(lines))] {
			last = uint64(l.Number)
			frames = append(frames, normalize.Frame{Message: l.Msg, Sequence: last, Dialect: "auto"})
		}
		if _, err := n.FeedBatch(id, frames, emit); err != nil {
			t.Fatal(err)
		}
		i += len(frames)
	}
	if _, err := replicas[0].CloseSession(id, normalize.WithSequence(last+1), emit); err != nil {
		t.Fatal(err)
	}
	return out
}

// sharedStoreParity checks that every recording, fed frame by frame in turn
// to n Normalizers, each with the store open gives for it (one store, or
// connections to the same one), gives event for event what one Normalizer
// without a store gives (the goldens are of that one).
func sharedStoreParity(t *testing.T, n int, open func(t *testing.T, n int) []store.Store) {
	for _, file := range recordings(t) {
		name := strings.TrimSuffix(filepath.Base(file), ".ndjson")
		t.Run(name, func(t *testing.T) {
			want := embedded(t, file, name, 1, normalize.New())
			replicas := make([]*normalize.Normalizer, n)
			for i, st := range open(t, n) {
				replicas[i] = normalize.New(normalize.WithStore(st))
			}
			if len(want) == 0 {
				t.Fatal("the recording produced nothing")
			}
			for _, batch := range []int{1, 4} {
				got := embedded(t, file, fmt.Sprint(name, "-", batch), batch, replicas...)
				if g, w := strings.Join(got, "\n"), strings.Join(want, "\n"); g != strings.ReplaceAll(w, name, fmt.Sprint(name, "-", batch)) {
					t.Fatalf("through %d replicas sharing a store, in batches of %d:\n%s\n\none process alone:\n%s", n, batch, g, w)
				}
			}
		})
	}
}

func TestSharedMemoryStoreMatchesOneProcess(t *testing.T) {
	for _, n := range []int{1, 2, 3} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			sharedStoreParity(t, n, func(_ *testing.T, n int) []store.Store {
				st := store.NewMemory()
				all := make([]store.Store, n)
				for i := range all {
					all[i] = st
				}
				return all
			})
		})
	}
}

// The same through a real redis-server: three replicas, each with its own
// connections, as three processes would have.
func TestSharedRedisStoreMatchesOneProcess(t *testing.T) {
	url := testredis.Start(t)
	recording := 0
	sharedStoreParity(t, 3, func(t *testing.T, n int) []store.Store {
		recording++ // a fresh key space per recording
		all := make([]store.Store, n)
		for i := range all {
			st, err := redisstore.Open(url, redisstore.WithPrefix(fmt.Sprintf("parity%d:", recording)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			all[i] = st
		}
		return all
	})
}
