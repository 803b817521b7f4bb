package service

import (
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/dialect"
)

// A frame read ahead is used only when it was read with the dialect the
// session reads it with; otherwise it is read again.
func TestReadAheadUsedOnlyWithTheSameDialect(t *testing.T) {
	claude, ok := dialect.Lookup("claude")
	if !ok {
		t.Fatal("no claude dialect")
	}
	msg := []byte(`{"jsonrpc":"2.0","id":0,"result":{"agentInfo":{"name":"real"}}}`)
	marked := &aheadRead{with: claude, frame: dialect.Frame{AgentName: "read ahead"}}

	r := &reply{ahead: marked}
	if fr, err := r.readWith(claude, msg); err != nil || fr.AgentName != "read ahead" {
		t.Fatalf("same dialect: got %q, %v; want the frame read ahead", fr.AgentName, err)
	}
	if r.ahead != nil {
		t.Fatal("a read ahead is used once")
	}
	if fr, _ := r.readWith(claude, msg); fr.AgentName != "real" {
		t.Fatalf("second read: got %q, want a fresh read", fr.AgentName)
	}

	r = &reply{ahead: marked}
	if fr, _ := r.readWith(dialect.Generic(), msg); fr.AgentName != "real" {
		t.Fatalf("other dialect: got %q, want the frame read again", fr.AgentName)
	}
}

// The stream's reader expects each session to keep the dialect its last
// applied frame was read with, and forgets a closed session.
func TestReadAheadLearnsTheSessionDialect(t *testing.T) {
	claude, _ := dialect.Lookup("claude")
	a := newReadAhead()
	frame := func(msg string) *pb.NormalizeRequest {
		return &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s", Message: []byte(msg)}}}
	}
	first := frame(`{"jsonrpc":"2.0","method":"session/cancel","params":{}}`)
	a.read(first)
	if got := a.take(first); got == nil || got.with.Info().Name != dialect.GenericName {
		t.Fatalf("first frame read ahead with %v, want generic", got)
	}
	a.learn(first, claude)
	second := frame(`{"jsonrpc":"2.0","method":"session/cancel","params":{}}`)
	a.read(second)
	if got := a.take(second); got == nil || got.with.Info().Name != "claude" || !got.frame.Cancelled {
		t.Fatalf("second frame read ahead as %+v, want claude's read", got)
	}
	a.learn(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: "s"}}}, nil)
	third := frame(`{}`)
	a.read(third)
	if got := a.take(third); got == nil || got.with.Info().Name != dialect.GenericName {
		t.Fatalf("after close read ahead with %v, want generic", got)
	}
	if a.take(third) != nil {
		t.Fatal("take forgets the read")
	}
	bad := &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s", Dialect: "nope", Message: []byte(`{}`)}}}
	a.read(bad)
	if a.take(bad) != nil {
		t.Fatal("a frame naming an unknown dialect is not read ahead")
	}
}
