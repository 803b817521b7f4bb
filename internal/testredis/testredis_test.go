package testredis

import (
	"testing"

	"github.com/acpnorm/acpnorm/internal/redisproc"
)

func TestStartRestart(t *testing.T) {
	s := StartServer(t)
	if err := redisproc.Ping(s.Addr); err != nil {
		t.Fatalf("PING after Start: %v", err)
	}
	s.Restart()
	if err := redisproc.Ping(s.Addr); err != nil {
		t.Fatalf("PING after Restart: %v", err)
	}
	s.Stop()
	if err := redisproc.Ping(s.Addr); err == nil {
		t.Fatal("PING answered after Stop")
	}
	s.Stop() // again: nothing
}
