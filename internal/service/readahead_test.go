package service

import (
	"testing"

	pb "github.com/acpnorm/acpnorm/gen/go/acpnorm/v1"
	"github.com/acpnorm/acpnorm/internal/dialect"
)

// The stream's reader expects each session to keep the dialect its last
// applied frame was read with, and forgets a closed session.
func TestReadAheadLearnsTheSessionDialect(t *testing.T) {
	a := newReadAhead()
	frame := func(msg string) *pb.NormalizeRequest {
		return &pb.NormalizeRequest{Kind: &pb.NormalizeRequest_Frame{Frame: &pb.AcpFrame{SessionId: "s", Message: []byte(msg)}}}
	}
	first := frame(`{"jsonrpc":"2.0","method":"session/cancel","params":{}}`)
	a.read(first)
	if got := a.take(first); got == nil || got.Dialect() != dialect.GenericName {
		t.Fatalf("first frame read ahead with %v, want generic", got)
	}
	a.learn(first, "claude")
	second := frame(`{"jsonrpc":"2.0","method":"session/cancel","params":{}}`)
	a.read(second)
	if got := a.take(second); got == nil || got.Dialect() != "claude" {
		t.Fatalf("second frame read ahead as %+v, want claude's read", got)
	}
	a.learn(&pb.NormalizeRequest{Kind: &pb.NormalizeRequest_SessionClosed{SessionClosed: &pb.SessionClosed{SessionId: "s"}}}, "")
	third := frame(`{}`)
	a.read(third)
	if got := a.take(third); got == nil || got.Dialect() != dialect.GenericName {
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
