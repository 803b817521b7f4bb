package service

import (
	"unicode/utf8"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"google.golang.org/protobuf/encoding/protowire"
)

// The revisions a stream sends (a NormalizeResponse holding a ShellExec)
// are sized and encoded here by hand, field by field in the order of their
// numbers, as protobuf encodes them: the same bytes (TestShellExecWireIsProtobuf,
// FuzzShellExecWire), without protobuf's walk of its coder tables, which
// was 5% of the server's CPU at c=8 on two of bench/load's recording
// scenarios (BENCHMARKS.md, "Timers, revisions and a stream's records").
// Any other response, or one with unknown fields, goes to protobuf. A
// string that is not valid UTF-8, which protobuf refuses, is left to
// protobuf too, so that it fails as it would; only the texts of a revision
// the stream's feeder made from the Normalizer's are not read for it
// (valid UTF-8 by normalize.Text's contract, see outgoing.textsValid). TestShellExecWireFields
// fails when the contract gives these messages a field this file does not
// write.

// Field numbers of the messages encoded here.
const (
	respShellExec protowire.Number = 1

	execSessionID        protowire.Number = 1
	execToolCallID       protowire.Number = 2
	execRevision         protowire.Number = 3
	execDialect          protowire.Number = 4
	execCommand          protowire.Number = 5
	execCwd              protowire.Number = 6
	execDescription      protowire.Number = 7
	execState            protowire.Number = 8
	execOutcome          protowire.Number = 9
	execExitCode         protowire.Number = 10
	execSignal           protowire.Number = 11
	execTimedOut         protowire.Number = 12
	execOutput           protowire.Number = 13
	execStdout           protowire.Number = 14
	execStderr           protowire.Number = 15
	execApprovalReason   protowire.Number = 16
	execAwaitingApproval protowire.Number = 17
	execBackground       protowire.Number = 18
	execOutcomeReason    protowire.Number = 19
	execSequence         protowire.Number = 20
	execTerminalID       protowire.Number = 21
	execAgentVersion     protowire.Number = 22

	textText       protowire.Number = 1
	textMode       protowire.Number = 2
	textTruncated  protowire.Number = 3
	textTotalBytes protowire.Number = 4
)

// handShellExec returns the ShellExec r holds when r is encoded here: a
// revision with no unknown fields in it.
func handShellExec(r *pb.NormalizeResponse) *pb.ShellExec {
	k, ok := r.GetKind().(*pb.NormalizeResponse_ShellExec)
	if !ok || k.ShellExec == nil {
		return nil
	}
	x := k.ShellExec
	if len(r.ProtoReflect().GetUnknown()) > 0 || len(x.ProtoReflect().GetUnknown()) > 0 {
		return nil
	}
	for _, t := range [...]*pb.ShellText{x.Output, x.Stdout, x.Stderr} {
		if t != nil && len(t.ProtoReflect().GetUnknown()) > 0 {
			return nil
		}
	}
	return x
}

// Tag sizes: every field number here is under 16, one byte; 16 to 22 two.
const tag1, tag2 = 1, 2

func sizeString(tag int, s string) int {
	if s == "" {
		return 0
	}
	return tag + protowire.SizeBytes(len(s))
}

func sizeVarint(tag int, v uint64) int {
	if v == 0 {
		return 0
	}
	return tag + protowire.SizeVarint(v)
}

func sizeBool(tag int, v bool) int {
	if !v {
		return 0
	}
	return tag + 1
}

func shellTextSize(t *pb.ShellText) int {
	return sizeString(tag1, t.Text) +
		sizeVarint(tag1, uint64(int64(t.Mode))) +
		sizeBool(tag1, t.Truncated) +
		sizeVarint(tag1, uint64(t.TotalBytes))
}

func sizeText(tag int, t *pb.ShellText) int {
	if t == nil {
		return 0
	}
	return tag + protowire.SizeBytes(shellTextSize(t))
}

func shellExecSize(x *pb.ShellExec) int {
	n := sizeString(tag1, x.SessionId) +
		sizeString(tag1, x.ToolCallId) +
		sizeVarint(tag1, uint64(x.Revision)) +
		sizeString(tag1, x.Dialect) +
		sizeString(tag1, x.Command) +
		sizeString(tag1, x.Cwd) +
		sizeString(tag1, x.Description) +
		sizeVarint(tag1, uint64(int64(x.State))) +
		sizeVarint(tag1, uint64(int64(x.Outcome)))
	if x.ExitCode != nil { // explicit presence: 0 is sent
		n += tag1 + protowire.SizeVarint(uint64(int64(*x.ExitCode)))
	}
	return n + sizeString(tag1, x.Signal) +
		sizeBool(tag1, x.TimedOut) +
		sizeText(tag1, x.Output) +
		sizeText(tag1, x.Stdout) +
		sizeText(tag1, x.Stderr) +
		sizeString(tag2, x.ApprovalReason) +
		sizeBool(tag2, x.AwaitingApproval) +
		sizeBool(tag2, x.Background) +
		sizeString(tag2, x.OutcomeReason) +
		sizeVarint(tag2, x.Sequence) +
		sizeString(tag2, x.TerminalId) +
		sizeString(tag2, x.AgentVersion)
}

// responseSize is the encoded size of a response holding x.
func responseSize(x *pb.ShellExec) int {
	return tag1 + protowire.SizeBytes(shellExecSize(x))
}

// execSizeOf is the size of the ShellExec in a response of size bytes
// (responseSize's inverse: its value grows with its argument, so one
// length of the prefix fits).
func execSizeOf(size int) int {
	for k := 1; ; k++ {
		if n := size - tag1 - k; n < 0 || protowire.SizeVarint(uint64(n)) == k {
			return n
		}
	}
}

// wireBuf appends fields; ok turns false at the first string that is not
// valid UTF-8. With textsValid the ShellTexts' texts are known to be valid
// UTF-8 (see outgoing) and are copied without that check.
type wireBuf struct {
	b          []byte
	ok         bool
	textsValid bool
}

func (w *wireBuf) string(n protowire.Number, s string) {
	if s == "" {
		return
	}
	if !utf8.ValidString(s) {
		w.ok = false
	}
	w.b = protowire.AppendTag(w.b, n, protowire.BytesType)
	w.b = protowire.AppendString(w.b, s)
}

func (w *wireBuf) varint(n protowire.Number, v uint64) {
	if v == 0 {
		return
	}
	w.b = protowire.AppendTag(w.b, n, protowire.VarintType)
	w.b = protowire.AppendVarint(w.b, v)
}

func (w *wireBuf) bool(n protowire.Number, v bool) {
	if v {
		w.b = protowire.AppendTag(w.b, n, protowire.VarintType)
		w.b = append(w.b, 1)
	}
}

func (w *wireBuf) text(n protowire.Number, t *pb.ShellText) {
	if t == nil {
		return
	}
	w.b = protowire.AppendTag(w.b, n, protowire.BytesType)
	w.b = protowire.AppendVarint(w.b, uint64(shellTextSize(t)))
	if w.textsValid {
		if t.Text != "" {
			w.b = protowire.AppendTag(w.b, textText, protowire.BytesType)
			w.b = protowire.AppendString(w.b, t.Text)
		}
	} else {
		w.string(textText, t.Text)
	}
	w.varint(textMode, uint64(int64(t.Mode)))
	w.bool(textTruncated, t.Truncated)
	w.varint(textTotalBytes, uint64(t.TotalBytes))
}

// appendResponse appends the encoding of a response holding x, whose
// size is size (shellExecSize), to b, and says false when a string of x is
// not valid UTF-8 (protobuf refuses the message then). With textsValid
// the texts of x are known to be valid UTF-8 (see outgoing) and are not
// read for it.
func appendResponse(b []byte, x *pb.ShellExec, size int, textsValid bool) ([]byte, bool) {
	w := wireBuf{b: b, ok: true, textsValid: textsValid}
	w.b = protowire.AppendTag(w.b, respShellExec, protowire.BytesType)
	w.b = protowire.AppendVarint(w.b, uint64(size))
	w.string(execSessionID, x.SessionId)
	w.string(execToolCallID, x.ToolCallId)
	w.varint(execRevision, uint64(x.Revision))
	w.string(execDialect, x.Dialect)
	w.string(execCommand, x.Command)
	w.string(execCwd, x.Cwd)
	w.string(execDescription, x.Description)
	w.varint(execState, uint64(int64(x.State)))
	w.varint(execOutcome, uint64(int64(x.Outcome)))
	if x.ExitCode != nil {
		w.b = protowire.AppendTag(w.b, execExitCode, protowire.VarintType)
		w.b = protowire.AppendVarint(w.b, uint64(int64(*x.ExitCode)))
	}
	w.string(execSignal, x.Signal)
	w.bool(execTimedOut, x.TimedOut)
	w.text(execOutput, x.Output)
	w.text(execStdout, x.Stdout)
	w.text(execStderr, x.Stderr)
	w.string(execApprovalReason, x.ApprovalReason)
	w.bool(execAwaitingApproval, x.AwaitingApproval)
	w.bool(execBackground, x.Background)
	w.string(execOutcomeReason, x.OutcomeReason)
	w.varint(execSequence, x.Sequence)
	w.string(execTerminalID, x.TerminalId)
	w.string(execAgentVersion, x.AgentVersion)
	return w.b, w.ok
}
