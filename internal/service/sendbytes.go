package service

import (
	"context"
	"sync/atomic"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"google.golang.org/protobuf/proto"
)

// outgoing is a response waiting to be sent, with its size on the wire
// and whether it is encoded by hand (see marshal.go), both found once,
// when it is queued: the send loop hands them to the codec with it (see
// sized), which encodes it without sizing or checking it again.
type outgoing struct {
	r    *pb.NormalizeResponse
	n    int64
	hand bool
	// textsValid says that r's texts are a revision's of the Normalizer,
	// as the stream's feeder made it (feeder.madeHere): valid UTF-8 by
	// normalize.Text's contract, so that the hand encoding copies them
	// without reading them for UTF-8 first. Any other response, or one
	// made elsewhere, is checked as protobuf checks it.
	textsValid bool
}

// toSendMade is toSend for a response the stream's feeder made from a
// revision of the Normalizer when made is true (feeder.madeHere): a hand
// encoded one then skips the UTF-8 check of its texts (textsValid).
func toSendMade(r *pb.NormalizeResponse, made bool) outgoing {
	it := toSend(r)
	it.textsValid = it.hand && made
	return it
}

// toSend sizes r for the queue. A revision is sized by hand (see
// marshal.go); for any other response computing the size fills r's size
// cache, which the codec reads when it marshals r (see
// tolerantCodec.Marshal).
//
// A response is never changed once queued: the stream's loop makes it
// (shellExecResponse, frameErrorResponse, a refusal) and hands it only to
// the queue, whose one reader is the send loop. The codec still checks
// the one thing that could make a hand encoding with the carried size
// wrong, a length other than the size (see tolerantCodec.Marshal).
func toSend(r *pb.NormalizeResponse) outgoing {
	if x := handShellExec(r); x != nil {
		return outgoing{r: r, n: int64(responseSize(x)), hand: true}
	}
	return outgoing{r: r, n: int64(proto.Size(r))}
}

// sized is a queued response as the send loop gives it to gRPC's SendMsg,
// with what toSend found: the codec encodes a revision by hand with that
// size. It is a proto.Message (the response's own methods), so that any
// other codec, or a stats handler, sees the response itself.
type sized struct {
	*pb.NormalizeResponse
	n          int
	hand       bool
	textsValid bool // see outgoing
}

// sized is what the codec is handed to send it.
func (it outgoing) sized() sized {
	return sized{it.r, int(it.n), it.hand, it.textsValid}
}

// sendBytes bounds the bytes of the responses one stream has queued for
// its client and is sending, as SendQueue bounds their number: the
// revisions a stream queues carry whole texts, so a client that reads
// nothing would otherwise hold SendQueue of the largest (a quarter of a
// GiB at the defaults) outside every memory bound. The stream's loop adds
// a response's bytes when it queues it and waits while the queue holds
// SendQueueBytes (one response is always let through, however large); the
// send loop takes them off once Send returns.
type sendBytes struct {
	max   int64
	bytes atomic.Int64  // queued on out, or being sent
	room  chan struct{} // a send freed bytes (one signal pending at most)
	total *atomic.Int64 // all streams' queued bytes, for the metric
}

func newSendBytes(max int, total *atomic.Int64) *sendBytes {
	return &sendBytes{max: int64(max), room: make(chan struct{}, 1), total: total}
}

// fits says whether a response of n bytes may be queued now.
func (q *sendBytes) fits(n int64) bool {
	b := q.bytes.Load()
	return b == 0 || b+n <= q.max
}

// wait waits until a response of n bytes fits, or ctx ends.
func (q *sendBytes) wait(ctx context.Context, n int64) error {
	for !q.fits(n) {
		select {
		case <-q.room:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// held counts n bytes the stream holds that are not on the queue yet (the
// answers waiting outside their session's lock), queued moves them to the
// queue, and dropped forgets them.
func (q *sendBytes) held(n int64)    { q.total.Add(n) }
func (q *sendBytes) queued(n int64)  { q.bytes.Add(n) }
func (q *sendBytes) dropped(n int64) { q.total.Add(-n) }

// sent takes off the queue a response of n bytes that was sent, or that
// will not be.
func (q *sendBytes) sent(n int64) {
	q.bytes.Add(-n)
	q.total.Add(-n)
	select {
	case q.room <- struct{}{}:
	default:
	}
}
