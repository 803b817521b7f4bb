package service

import (
	"flag"
	"os"
	"testing"
)

// TestMain runs every test of the package with scratch's buffers poisoned
// as they are given back (poisonScratch): a request whose message is read
// after its buffer was freed reads 0xA5 bytes, and its answers change. A
// run with benchmarks (-bench) does not poison, so that they measure what
// the server does.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		poisonScratch = true
	}
	os.Exit(m.Run())
}
