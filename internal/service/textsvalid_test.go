package service

import (
	"context"
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// The stream's feeder marks the revisions it makes from the Normalizer's
// (their texts are not read for UTF-8 when sent, see outgoing.textsValid)
// and nothing else: every response of every recording, and the
// FrameErrors of frames it refuses, through the stream's path (toSend,
// then the codec as the send loop gives it), is protobuf's encoding.
func TestFeederMarksOnlyItsRevisions(t *testing.T) {
	names, all, err := readClasses()
	require.NoError(t, err)
	codec := newTolerantCodec()
	for i, name := range names {
		t.Run(name, func(t *testing.T) {
			ss := newSessions(DefaultConfig(), NewMetrics(nil), nil)
			var feed *feeder
			marked := 0
			feed = ss.newFeeder(context.Background(), newDelivered(), func(r *pb.NormalizeResponse) error {
				made := feed.madeHere(r)
				assert.Equal(t, r.GetShellExec() != nil, made, "marked as the feeder's revision: %v", r)
				it := toSendMade(r, made)
				if it.textsValid {
					marked++
				}
				want, err := proto.Marshal(r)
				require.NoError(t, err)
				msg := it.sized()
				bs, err := codec.Marshal(&msg)
				require.NoError(t, err)
				assert.Equal(t, want, bs.Materialize())
				bs.Free()
				return nil
			})
			frames := all[i]
			for j, f := range frames {
				_, err := feed.handle(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{
					SessionId: "s", Dialect: "auto", Sequence: uint64(j + 1), Direction: f.Dir, Message: f.Msg,
				}}}, nil)
				require.NoError(t, err)
			}
			// A frame it refuses: a FrameError, never marked.
			_, err := feed.handle(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{
				SessionId: "s", Dialect: "auto", Sequence: uint64(len(frames) + 1), Message: nil,
			}}}, nil)
			require.NoError(t, err)
			assert.False(t, feed.madeHere(nil))
			assert.Positive(t, marked, "the recording's revisions were marked")
		})
	}
}
