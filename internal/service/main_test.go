package service

import (
	"flag"
	"os"
	"testing"
)

// TestMain runs every test of the package with scratch's buffers poisoned
// as they are given back (poisonScratch): a request whose message is read
// after its buffer was freed reads 0xA5 bytes, so that its answers differ
// from the engine's for the same frame (TestMessagesReadInPlace holds
// them to those). A run with benchmarks (-bench) does not poison, so that
// they measure what the server does.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		poisonScratch = true
	}
	os.Exit(m.Run())
}
