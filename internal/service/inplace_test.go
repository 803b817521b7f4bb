package service

import (
	"context"
	"os"
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
	for n, rec := range recordings(t) {
		name, frames := rec.name, rec.frames
		var want []*pb.NormalizeResponse
		ss := newSessions(DefaultConfig(), NewMetrics(nil))
		feed := ss.newFeeder(context.Background(), newDelivered(), func(out *pb.NormalizeResponse) error {
			want = append(want, out)
			return nil
		})
		for _, req := range frames {
			_, err := feed.handle(req, nil)
			require.NoError(t, err)
		}

		// Each recording on a session of its own: the service's
		// sessions outlive the stream.
		st := h.open()
		for _, req := range frames {
			f := proto.Clone(req).(*pb.NormalizeRequest)
			f.GetFrame().SessionId = name
			st.control(f)
		}
		require.NoError(t, st.s.CloseSend())
		var got []*pb.NormalizeResponse
		for r := range st.replies {
			got = append(got, r)
		}
		require.Len(t, got, len(want), "%s: answers", name)
		for i := range want {
			x := proto.Clone(want[i]).(*pb.NormalizeResponse)
			if e := x.GetShellExec(); e != nil {
				e.SessionId = name
			}
			if e := x.GetFrameError(); e != nil {
				e.SessionId = name
			}
			require.True(t, proto.Equal(x, got[i]), "%s (%d): answer %d differs:\n got %v\nwant %v", name, n, i, got[i], x)
		}
	}
}

// recording is one recording of test/testdata/recordings (name: its file
// name), its lines as frames of session "s", with the dialect detected,
// numbered from 1.
type recording struct {
	name   string
	frames []*pb.NormalizeRequest
}

func recordings(t *testing.T) []recording {
	t.Helper()
	files, _ := filepath.Glob("../../test/testdata/recordings/*.ndjson")
	require.NotEmpty(t, files, "no recordings")
	var out []recording
	for _, file := range files {
		fh, err := os.Open(file)
		require.NoError(t, err)
		lines, err := replay.Read(fh)
		fh.Close()
		require.NoError(t, err)
		rec := recording{name: filepath.Base(file), frames: make([]*pb.NormalizeRequest, len(lines))}
		for j, l := range lines {
			rec.frames[j] = &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{
				SessionId: "s", Dialect: "auto", Sequence: uint64(j + 1), Direction: l.Dir, Message: l.Msg,
			}}}
		}
		out = append(out, rec)
	}
	return out
}
