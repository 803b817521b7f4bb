package testredis

import "testing"

func TestStartRestart(t *testing.T) {
	s := StartServer(t)
	if err := ping(s.Addr); err != nil {
		t.Fatalf("PING after Start: %v", err)
	}
	s.Restart()
	if err := ping(s.Addr); err != nil {
		t.Fatalf("PING after Restart: %v", err)
	}
	s.Stop()
	if err := ping(s.Addr); err == nil {
		t.Fatal("PING answered after Stop")
	}
	s.Stop() // again: nothing
}
