package load

import (
	"bytes"
	"fmt"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// GHZData returns the messages of one pass over s as a JSON array of
// protojson NormalizeRequests, for ghz's --data-file: every replay under
// its own session id, each followed by its SessionClosed. The session ids
// are ghz templates, unique per ghz worker and call, plus nonce.
func GHZData(s *Scenario, nonce string) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('[')
	var seq uint64
	first := true
	add := func(req *pb.NormalizeRequest) error {
		b, err := protojson.Marshal(req)
		if err != nil {
			return err
		}
		if !first {
			buf.WriteString(",\n")
		}
		first = false
		buf.Write(b)
		return nil
	}
	for i, rec := range s.Replays {
		sid := fmt.Sprintf("ghz-%s-{{.WorkerID}}-{{.RequestNumber}}-%d", nonce, i)
		for _, f := range rec {
			seq++
			if err := add(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{
				SessionId: sid, Dialect: "auto", Sequence: seq, Direction: f.Dir, Message: f.Msg,
			}}}); err != nil {
				return nil, err
			}
		}
		seq++
		if err := add(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: sid, Sequence: seq}}}); err != nil {
			return nil, err
		}
	}
	buf.WriteString("]\n")
	return buf.Bytes(), nil
}
