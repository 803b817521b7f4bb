package service

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/normalize"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the codec wrapped here
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// badUTF8Field is the unknown field a NormalizeRequest read by
// tolerantCodec carries when some of its string fields were not valid
// UTF-8: its value names them. The number is the largest protobuf allows,
// which the contract never uses.
const badUTF8Field protowire.Number = protowire.MaxValidNumber

// claimOverField is the unknown field a NormalizeRequest read by
// tolerantCodec carries when its frame's held_revisions named more calls
// than the codec's bound: its value is their number (a varint). The
// number is the one below badUTF8Field, which the contract never uses
// either.
const claimOverField protowire.Number = badUTF8Field - 1

// tolerantCodec is gRPC's protobuf codec, except that a NormalizeRequest
// with a string field that is not valid UTF-8 (which protobuf refuses, and
// which would end the whole stream) is read with those fields made valid
// and marked, so that the stream answers it with a FrameError instead; a
// NormalizeRequest whose claim (AcpFrame.held_revisions) names more than
// claims calls is not decoded but marked, answered with a FrameError too
// (see maxClaim); and its buffers come from scratch, which does not clear
// them.
type tolerantCodec struct {
	encoding.CodecV2
	claims int
}

func newTolerantCodec() tolerantCodec {
	return tolerantCodec{encoding.GetCodecV2("proto"), maxClaim(normalize.DefaultMaxCallsPerSession)}
}

// maxClaim is the most calls a claim (AcpFrame.held_revisions) may name
// on a server whose sessions hold at most callsPerSession calls at once:
// 64 of them for each, and never fewer than 65536 (64 × the default
// 1024).
//
// Decoded, a claim is a map of about 50 bytes a call with a short id,
// five times what such an entry takes on the wire (and protobuf allocates
// three times that as the map grows): past a bound, a message under
// --max-message-bytes decodes to many times its size (1.1 million calls
// in 12 MB took 60 MiB, 160 MB allocated and a second of CPU), on each of
// the requests a stream reads ahead. At the bound a claim's map is about
// 3.5 MiB at the defaults, and the codec refuses one over it before
// protobuf decodes it.
//
// A conforming client is not refused: it names every call it holds,
// released ones too, so its claim grows with the session's history, but
// the server checks at most 2 × callsPerSession of them (see normalize's
// checkedClaims), and the session clients name at most 1024. A claim at
// the bound is the history of a session that released 63 times as many
// calls as it may hold at once: 64,512 shell commands at the defaults.
// The floor keeps every claim a server with the default limits takes
// accepted by one whose sessions hold fewer calls.
func maxClaim(callsPerSession int) int { return max(64*callsPerSession, 1<<16) }

// Marshal encodes v as gRPC's protobuf codec does, into a buffer from
// scratch when it is too big to allocate for the occasion.
func (c tolerantCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return c.CodecV2.Marshal(v)
	}
	if s, ok := m.(*sized); ok {
		if s.hand {
			// Sized and checked when queued (see toSend): encoded with
			// that size. A length other than it would mean the revision
			// changed since; it is then encoded as one never sized.
			x := s.GetShellExec()
			if b, err := encodeSized(s.n, x, s.textsValid, nil, proto.MarshalOptions{}); err == nil {
				if b.Len() == s.n {
					return b, nil
				}
				b.Free()
			}
		}
		m = s.NormalizeResponse
	}
	if r, ok := m.(*pb.NormalizeResponse); ok {
		if x := handShellExec(r); x != nil {
			if b, err := encodeSized(responseSize(x), x, false, nil, proto.MarshalOptions{}); err == nil {
				return b, nil
			}
			// A string that is not valid UTF-8: protobuf says so. The
			// size cache was never filled (see toSend).
			return c.CodecV2.Marshal(m)
		}
	}
	opts := proto.MarshalOptions{UseCachedSize: true} // the size just computed
	var size int
	if _, ok := m.(*pb.NormalizeResponse); ok {
		// A stream sized it when it queued it (see toSend), and no
		// response changes once made: the size is in its cache (one
		// never sized is sized here, as any message).
		size = opts.Size(m)
	} else {
		size = proto.Size(m)
	}
	return encodeSized(size, nil, false, m, opts)
}

// errNotHand is encodeSized's error for a revision the hand encoding
// refuses, as protobuf would (see marshal.go).
var errNotHand = errors.New("a revision's string is not valid UTF-8")

// encodeSized encodes a message of size bytes: a revision x by hand (see
// marshal.go; with textsValid its texts are not read for UTF-8, see
// outgoing), else m with opts. One under gRPC's pooling threshold gets
// an array of its own; a bigger one a buffer from scratch, which gRPC
// gives back once sent.
func encodeSized(size int, x *pb.ShellExec, textsValid bool, m proto.Message, opts proto.MarshalOptions) (mem.BufferSlice, error) {
	appendTo := func(b []byte) ([]byte, error) {
		if x == nil {
			return opts.MarshalAppend(b, m)
		}
		b, ok := appendResponse(b, x, execSizeOf(size), textsValid)
		if !ok {
			return nil, errNotHand
		}
		return b, nil
	}
	if mem.IsBelowBufferPoolingThreshold(size) {
		b, err := appendTo(make([]byte, 0, size))
		if err != nil {
			return nil, err
		}
		return oneSlice(b), nil
	}
	buf := scratch.Get(size)
	out, err := appendTo((*buf)[:0])
	if err != nil {
		scratch.Put(buf)
		return nil, err
	}
	if len(out) == 0 || &out[0] != &(*buf)[:1][0] {
		// Larger than its size said (the message changed meanwhile):
		// out is an array of its own.
		scratch.Put(buf)
		return oneSlice(out), nil
	}
	*buf = out // every byte of it written by this encoding
	return mem.BufferSlice{mem.NewBuffer(buf, scratch)}, nil
}

// slicedBytes is a response's encoding as the codec hands it to gRPC:
// the one-element BufferSlice and the buffer it holds made by one
// allocation, where mem.BufferSlice{mem.SliceBuffer(b)} makes two (the
// array, and the slice header boxed in the interface). A *SliceBuffer is
// the same Buffer as the SliceBuffer it points to.
type slicedBytes struct {
	one [1]mem.Buffer
	b   mem.SliceBuffer
}

// oneSlice hands b to gRPC, which frees nothing of it (see slicedBytes).
func oneSlice(b []byte) mem.BufferSlice {
	s := &slicedBytes{b: b}
	s.one[0] = &s.b
	return s.one[:]
}

func (c tolerantCodec) Unmarshal(data mem.BufferSlice, v any) error {
	var req *pb.NormalizeRequest
	var in *received
	switch v := v.(type) {
	case *pb.NormalizeRequest:
		req = v
	case *received:
		in = v // the request is made when the frame is read (see received)
	default:
		return c.CodecV2.Unmarshal(data, v)
	}
	// A request that came in one piece is read where it is; one in
	// several is joined first.
	var b []byte
	var joined mem.Buffer
	if len(data) == 1 {
		b = data[0].ReadOnlyData()
	} else {
		joined = data.MaterializeToBuffer(scratch)
		b = joined.ReadOnlyData()
	}
	if decodeFrame(b, req, in) {
		if in != nil && len(in.GetFrame().GetMessage()) > 0 {
			// The frame's message is read in place: the request keeps
			// the buffer until the stream's loop has applied it.
			if joined == nil {
				data[0].Ref()
				joined = data[0]
			}
			in.buf = joined
		} else if joined != nil {
			joined.Free()
		}
		return nil
	}
	if joined != nil {
		defer joined.Free()
	}
	if req == nil {
		if in.NormalizeRequest == nil {
			in.NormalizeRequest = new(pb.NormalizeRequest)
		}
		req = in.NormalizeRequest
	}
	if n := claimEntries(b); n > c.claims {
		claimOver(b, req, n)
		return nil
	}
	err := proto.Unmarshal(b, req)
	if err == nil {
		if u := req.ProtoReflect().GetUnknown(); len(u) > 0 {
			req.ProtoReflect().SetUnknown(withoutMarks(u)) // only this codec sets them
		}
		return nil
	}
	if !strings.Contains(err.Error(), "invalid UTF-8") {
		return err
	}
	var bad badFields
	fixed, ferr := bad.valid(make([]byte, 0, len(b)), b, req.ProtoReflect().Descriptor(), "")
	if ferr != nil || len(bad.names) == 0 {
		return err
	}
	if err := proto.Unmarshal(fixed, req); err != nil {
		return err
	}
	m := req.ProtoReflect()
	mark := protowire.AppendTag(nil, badUTF8Field, protowire.BytesType)
	mark = protowire.AppendString(mark, bad.String())
	m.SetUnknown(append(withoutMarks(m.GetUnknown()), mark...))
	return nil
}

// claimEntries counts the entries of the claims (AcpFrame.held_revisions)
// the NormalizeRequest b carries, in every frame field of it (protobuf
// merges them), without decoding them. It reads b only as far as it is
// well formed; what follows, protobuf then refuses.
func claimEntries(b []byte) int {
	n := 0
	eachField(b, func(num protowire.Number, typ protowire.Type, v []byte) bool {
		if num == requestFrame && typ == protowire.BytesType {
			frame, _ := protowire.ConsumeBytes(v)
			eachField(frame, func(num protowire.Number, typ protowire.Type, _ []byte) bool {
				// Of another wire type, protobuf keeps it as an unknown
				// field, which it does not decode.
				if num == frameHeld && typ == protowire.BytesType {
					n++
				}
				return true
			})
		}
		return true
	})
	return n
}

// eachField calls fn with each field of the protobuf message b in turn:
// its number, its wire type and its value as it is on the wire (a
// length-delimited one with its length), until fn returns false or b is
// no longer well formed.
func eachField(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte) bool) {
	for len(b) > 0 {
		num, typ, k := protowire.ConsumeTag(b)
		if k < 0 {
			return
		}
		b = b[k:]
		k = protowire.ConsumeFieldValue(num, typ, b)
		if k < 0 || !fn(num, typ, b[:k]) {
			return
		}
		b = b[k:]
	}
}

// claimOver sets req to a frame of the session and sequence that the
// NormalizeRequest b names (as protobuf reads them: the last one sent),
// with no message and no claim, and marked as naming n calls (see
// claimOverField): the stream answers it with a FrameError and does not
// apply it. A session id that is not valid UTF-8 has its bad bytes made
// U+FFFD.
func claimOver(b []byte, req *pb.NormalizeRequest, n int) {
	var session []byte
	var seq uint64
	eachField(b, func(num protowire.Number, typ protowire.Type, v []byte) bool {
		if num == requestFrame && typ == protowire.BytesType {
			frame, _ := protowire.ConsumeBytes(v)
			eachField(frame, func(num protowire.Number, typ protowire.Type, v []byte) bool {
				switch {
				case num == frameSessionID && typ == protowire.BytesType:
					session, _ = protowire.ConsumeBytes(v)
				case num == frameSequence && typ == protowire.VarintType:
					seq, _ = protowire.ConsumeVarint(v)
				}
				return true
			})
		}
		return true
	})
	proto.Reset(req)
	req.Kind = &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: strings.ToValidUTF8(string(session), "\uFFFD"), Sequence: seq}}
	mark := protowire.AppendTag(nil, claimOverField, protowire.VarintType)
	mark = protowire.AppendVarint(mark, uint64(n))
	req.ProtoReflect().SetUnknown(mark)
}

// claimOverCount returns the number of calls the claim of req named when
// the codec refused it (see claimOver), or 0.
func claimOverCount(req *pb.NormalizeRequest) int {
	n := 0
	eachField(req.ProtoReflect().GetUnknown(), func(num protowire.Number, typ protowire.Type, v []byte) bool {
		if num == claimOverField && typ == protowire.VarintType {
			c, _ := protowire.ConsumeVarint(v)
			n = int(c)
			return false
		}
		return true
	})
	return n
}

// codecMarked reports whether the codec marked req as one the stream
// answers with a FrameError instead of applying it (see codecRefusal).
func codecMarked(req *pb.NormalizeRequest) bool {
	return len(req.ProtoReflect().GetUnknown()) > 0 && (invalidUTF8(req) != "" || claimOverCount(req) > 0)
}

// codecRefusal is the FrameError answering a request the codec marked
// (its strings not valid UTF-8, or its claim over the bound), or nil.
// Its session id is echoed only within maxID bytes. bound is the most
// calls a claim may name (see maxClaim).
func codecRefusal(req *pb.NormalizeRequest, maxID, bound int) *pb.NormalizeResponse {
	if len(req.ProtoReflect().GetUnknown()) == 0 {
		return nil
	}
	if n := claimOverCount(req); n > 0 {
		session, seq := req.GetFrame().GetSessionId(), req.GetFrame().GetSequence()
		of := ""
		if len(session) > maxID {
			session = ""
		} else if session != "" {
			of = fmt.Sprintf(" of session %q", session)
		}
		return frameErrorResponse(&normalize.FrameError{
			SessionID: session,
			Sequence:  seq,
			Code:      normalize.InvalidArgument,
			Message:   fmt.Sprintf("frame %d%s: held_revisions names %d calls, more than a claim may name (at most %d: 64 × --max-calls-per-session, never under 65536); it was not read, and the frame was not applied", seq, of, n, bound),
		})
	}
	if fields := invalidUTF8(req); fields != "" {
		return notUTF8Error(req, fields, maxID)
	}
	return nil
}

// withoutMarks returns the unknown fields u without the marks this codec
// sets, which a client may have sent.
func withoutMarks(u protoreflect.RawFields) protoreflect.RawFields {
	return withoutField(withoutField(u, badUTF8Field), claimOverField)
}

// received is a request as a stream's reader receives it (RecvMsg): when
// buf is not nil, the message of its frame is in buf, read in place
// rather than copied, and buf must be freed once nothing reads the
// message any more (the request applied), and not before.
//
// A stream's frames mostly repeat its session id, dialect and cwd: last
// holds the ones of its previous frame, so that a frame that repeats
// them shares those strings instead of allocating its own.
//
// The codec makes the request of a frame it reads, with the frame (see
// decodeFrame), in place of the one it is given, which it decodes any
// other request into (as another codec, one that knows nothing of
// received, decodes every request there).
type received struct {
	*pb.NormalizeRequest
	buf  mem.Buffer
	last [frameCwd - frameSessionID + 1]string
}

// decodeFrame reads b as a NormalizeRequest holding one AcpFrame, the way
// proto.Unmarshal does, without its reflection. Without in, it keeps
// nothing of b (the message is copied into an array of its own size, not
// cleared before it is filled); with in, the message is the part of b it
// is in, capped there, and a string equal to in's last one of its field
// is that string. It reads only the common
// form, the frame once with every field at most once, each of its own wire
// type, and valid UTF-8 strings; it returns false, having changed nothing,
// on anything else (another kind, a field repeated or unknown, a string
// that is not valid UTF-8, a malformed encoding), which proto.Unmarshal
// then reads. With in, req may be nil: a request is then made when the
// frame is read, and set as in's.
func decodeFrame(b []byte, req *pb.NormalizeRequest, in *received) bool {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 || num != requestFrame || typ != protowire.BytesType {
		return false
	}
	wire, m := protowire.ConsumeBytes(b[n:])
	if m < 0 || n+m != len(b) {
		return false
	}
	// The oneof's wrapper and the frame are one allocation, with the
	// request when it is made here.
	var kind *pb.NormalizeRequest_Frame
	var f *pb.AcpFrame
	fresh := req == nil
	if fresh {
		one := new(frameRequest)
		req, kind, f = &one.req, &one.kind, &one.frame
	} else {
		one := new(struct {
			kind  pb.NormalizeRequest_Frame
			frame pb.AcpFrame
		})
		kind, f = &one.kind, &one.frame
	}
	var seen uint8
	var last [len(received{}.last)]string
	if in != nil {
		last = in.last
	}
	for len(wire) > 0 {
		num, typ, n := protowire.ConsumeTag(wire)
		if n < 0 || num < frameSessionID || num > frameMessage || seen&(1<<num) != 0 {
			return false
		}
		seen |= 1 << num
		wire = wire[n:]
		if num == frameSequence || num == frameDirection {
			if typ != protowire.VarintType {
				return false
			}
			v, n := protowire.ConsumeVarint(wire)
			if n < 0 {
				return false
			}
			if num == frameSequence {
				f.Sequence = v
			} else {
				f.Direction = pb.Direction(int32(v))
			}
			wire = wire[n:]
			continue
		}
		if typ != protowire.BytesType {
			return false
		}
		v, n := protowire.ConsumeBytes(wire)
		if n < 0 {
			return false
		}
		wire = wire[n:]
		if num == frameMessage {
			switch {
			case len(v) == 0:
			case in == nil:
				f.Message = append([]byte(nil), v...)
			default:
				f.Message = v[:len(v):len(v)]
			}
			continue
		}
		k := num - frameSessionID
		if string(v) != last[k] { // last's are valid UTF-8
			if !utf8.Valid(v) {
				return false
			}
			last[k] = string(v)
		}
		switch num {
		case frameSessionID:
			f.SessionId = last[k]
		case frameDialect:
			f.Dialect = last[k]
		case frameCwd:
			f.Cwd = last[k]
		}
	}
	kind.Frame = f
	if !fresh {
		proto.Reset(req)
	}
	req.Kind = kind
	if in != nil {
		in.last = last
		in.NormalizeRequest = req
	}
	return true
}

// frameRequest is a request decodeFrame makes (see received): the
// request, its oneof's wrapper and the frame, one allocation.
type frameRequest struct {
	req   pb.NormalizeRequest
	kind  pb.NormalizeRequest_Frame
	frame pb.AcpFrame
}

// The field numbers decodeFrame reads (proto/acpnorm/v1): the frame of a
// NormalizeRequest, and the first six fields of AcpFrame, which it takes
// to be numbered 1 to 6 (TestDecodeFrameIsProtobuf fails should they
// move).
const requestFrame protowire.Number = 1

const (
	frameSessionID protowire.Number = 1 + iota
	frameDialect
	frameCwd
	frameSequence
	frameDirection
	frameMessage
	frameHeld // held_revisions, which decodeFrame leaves to protobuf
)

// invalidUTF8 returns the names of the string fields of req that were not
// valid UTF-8 on the wire, or "".
func invalidUTF8(req *pb.NormalizeRequest) string {
	fields := ""
	eachField(req.ProtoReflect().GetUnknown(), func(num protowire.Number, typ protowire.Type, v []byte) bool {
		if num == badUTF8Field && typ == protowire.BytesType {
			b, _ := protowire.ConsumeBytes(v)
			fields = string(b)
			return false
		}
		return true
	})
	return fields
}

// withoutField returns the unknown fields u without field num.
func withoutField(u protoreflect.RawFields, num protowire.Number) protoreflect.RawFields {
	var out protoreflect.RawFields
	for len(u) > 0 {
		n2, typ, n := protowire.ConsumeTag(u)
		if n < 0 {
			return out
		}
		m := protowire.ConsumeFieldValue(n2, typ, u[n:])
		if m < 0 {
			return out
		}
		if n2 != num {
			out = append(out, u[:n+m]...)
		}
		u = u[n+m:]
	}
	return out
}

// maxBadFields is the most fields a FrameError for a request that is not
// valid UTF-8 names; it counts the others.
const maxBadFields = 8

// badFields re-encodes messages with their string fields made valid
// UTF-8, and collects the dotted names of the fields it changed: each
// once, in the order first found, however often the request repeats it.
// A name is made once for each field of each place in the message (the
// schema's size), not for each occurrence (the request's).
type badFields struct {
	names []string
	seen  map[fieldAt]*fieldName
}

// fieldAt is a field of a message found under a prefix of dotted names.
type fieldAt struct {
	prefix string
	fd     protoreflect.FieldDescriptor
}

// fieldName is the dotted name of a field (for a message field, with a
// dot after it: its fields' prefix), and whether it was found not valid.
type fieldName struct {
	name string
	bad  bool
}

func (f *badFields) at(prefix string, fd protoreflect.FieldDescriptor) *fieldName {
	k := fieldAt{prefix, fd}
	if n, ok := f.seen[k]; ok {
		return n
	}
	if f.seen == nil {
		f.seen = make(map[fieldAt]*fieldName)
	}
	n := &fieldName{name: prefix + string(fd.Name())}
	if fd.Kind() == protoreflect.MessageKind {
		n.name += "."
	}
	f.seen[k] = n
	return n
}

// String lists the fields found not valid, the first maxBadFields of
// them by name.
func (f *badFields) String() string {
	if len(f.names) <= maxBadFields {
		return strings.Join(f.names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(f.names[:maxBadFields], ", "), len(f.names)-maxBadFields)
}

// valid appends to out the message b of type md with every string field
// (nested messages included) made valid UTF-8, each run of invalid bytes
// becoming U+FFFD, and notes the fields it changed, their names under
// prefix.
func (f *badFields) valid(out, b []byte, md protoreflect.MessageDescriptor, prefix string) ([]byte, error) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		fd := md.Fields().ByNumber(num)
		if typ != protowire.BytesType || fd == nil || (fd.Kind() != protoreflect.StringKind && fd.Kind() != protoreflect.MessageKind) {
			m := protowire.ConsumeFieldValue(num, typ, b[n:])
			if m < 0 {
				return nil, protowire.ParseError(m)
			}
			out = append(out, b[:n+m]...)
			b = b[n+m:]
			continue
		}
		v, m := protowire.ConsumeBytes(b[n:])
		if m < 0 {
			return nil, protowire.ParseError(m)
		}
		out = append(out, b[:n]...) // the tag
		switch {
		case fd.Kind() == protoreflect.MessageKind:
			start := len(out)
			var err error
			if out, err = f.valid(out, v, fd.Message(), f.at(prefix, fd).name); err != nil {
				return nil, err
			}
			out = lengthBefore(out, start)
		case utf8.Valid(v):
			out = protowire.AppendBytes(out, v)
		default:
			if name := f.at(prefix, fd); !name.bad {
				name.bad = true
				f.names = append(f.names, name.name)
			}
			start := len(out)
			out = lengthBefore(appendValid(out, v), start)
		}
		b = b[n+m:]
	}
	return out, nil
}

// lengthBefore puts the length of out[start:], which was written in
// place, before it as a varint (a field's length prefix).
func lengthBefore(out []byte, start int) []byte {
	size := len(out) - start
	k := protowire.SizeVarint(uint64(size))
	var room [binary.MaxVarintLen64]byte
	out = append(out, room[:k]...)
	copy(out[start+k:], out[start:start+size])
	protowire.AppendVarint(out[:start], uint64(size))
	return out
}

// appendValid appends v to out with each run of invalid UTF-8 bytes made
// U+FFFD, as strings.ToValidUTF8 does.
func appendValid(out, v []byte) []byte {
	bad := false
	for len(v) > 0 {
		r, k := utf8.DecodeRune(v)
		switch {
		case r != utf8.RuneError || k > 1:
			out = append(out, v[:k]...)
			bad = false
		case !bad:
			out = utf8.AppendRune(out, utf8.RuneError)
			bad = true
		}
		v = v[k:]
	}
	return out
}

// notUTF8Error is the FrameError answering a request whose string fields
// were not valid UTF-8. Its session id is echoed only within maxID bytes,
// as a valid one is (its bad bytes become U+FFFD, three bytes each).
func notUTF8Error(req *pb.NormalizeRequest, fields string, maxID int) *pb.NormalizeResponse {
	var session string
	var seq uint64
	switch k := req.GetKind().(type) {
	case *pb.NormalizeRequest_Frame:
		session, seq = k.Frame.GetSessionId(), k.Frame.GetSequence()
	case *pb.NormalizeRequest_TurnEnded:
		session, seq = k.TurnEnded.GetSessionId(), k.TurnEnded.GetSequence()
	case *pb.NormalizeRequest_SessionClosed:
		session, seq = k.SessionClosed.GetSessionId(), k.SessionClosed.GetSequence()
	}
	if len(session) > maxID {
		session = ""
	}
	verb := "is"
	if strings.Contains(fields, ",") {
		verb = "are"
	}
	return frameErrorResponse(&normalize.FrameError{
		SessionID: session, // invalid bytes shown as U+FFFD
		Sequence:  seq,
		Code:      normalize.InvalidArgument,
		Message:   fmt.Sprintf("request %d: %s %s not valid UTF-8, as protobuf string fields must be; the request was not applied", seq, fields, verb),
	})
}
