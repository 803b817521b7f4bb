package service

import (
	"context"
	"path/filepath"
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/replay"
	"github.com/acpnorm/acpnorm/store"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// A stream reads each frame's message where the transport put it (in a
// buffer of scratch, freed once the request is applied) instead of
// copying it. On every recording, the answers a stream sends are those
// the engine gives for the same frames fed directly from the recording's
// own bytes, with scratch poisoning each buffer as it is given back
// (TestMain): a message read after its buffer was freed would change
// them. With a store, a stream applies the queued frames of a session in
// batches, and frees their buffers after each batch.
func TestMessagesReadInPlace(t *testing.T) {
	t.Run("alone", func(t *testing.T) { checkReadInPlace(t, DefaultConfig()) })
	t.Run("store", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Store = store.NewMemory()
		checkReadInPlace(t, cfg)
	})
}

func checkReadInPlace(t *testing.T, cfg Config) {
	h := newHarness(t, cfg)
	for _, rec := range recordings(t) {
		var want []*pb.NormalizeResponse
		ss := newSessions(DefaultConfig(), NewMetrics(nil), nil)
		feed := ss.newFeeder(context.Background(), newDelivered(), func(out *pb.NormalizeResponse) error {
			want = append(want, out)
			return nil
		})
		for _, req := range rec.frames(rec.name) {
			_, err := feed.handle(req, nil)
			require.NoError(t, err)
		}

		// Each recording on a session of its own: the service's
		// sessions outlive the stream.
		got, err := replay.Play(context.Background(), h.client, rec.lines, replay.Options{SessionID: rec.name, Dialect: "auto", KeepOpen: true})
		require.NoError(t, err, rec.name)
		require.Len(t, got, len(want), "%s: answers", rec.name)
		for i := range want {
			require.True(t, proto.Equal(want[i], got[i]), "%s: answer %d differs:\n got %v\nwant %v", rec.name, i, got[i], want[i])
		}
	}
}

// recording is one recording of test/testdata/recordings (name: its file
// name).
type recording struct {
	name  string
	lines []replay.Line
}

func recordings(t *testing.T) []recording {
	t.Helper()
	files, _ := filepath.Glob("../../test/testdata/recordings/*.ndjson")
	require.NotEmpty(t, files, "no recordings")
	var out []recording
	for _, file := range files {
		lines, err := replay.ReadFile(file)
		require.NoError(t, err)
		out = append(out, recording{name: filepath.Base(file), lines: lines})
	}
	return out
}

// frames returns the recording's lines as frames of session sid, with the
// dialect detected, numbered as replay.Play numbers them (by line).
func (r recording) frames(sid string) []*pb.NormalizeRequest {
	frames := make([]*pb.NormalizeRequest, len(r.lines))
	for i, l := range r.lines {
		frames[i] = &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{
			SessionId: sid, Dialect: "auto", Sequence: uint64(l.Number), Direction: l.Dir, Message: l.Msg,
		}}}
	}
	return frames
}
