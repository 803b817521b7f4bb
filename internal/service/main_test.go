package service

import (
	"os"
	"testing"
)

// TestMain runs every test of the package with scratch's buffers poisoned
// as they are given back (poisonScratch): a request whose message is read
// after its buffer was freed reads 0xA5 bytes, and its answers change.
func TestMain(m *testing.M) {
	poisonScratch = true
	os.Exit(m.Run())
}
