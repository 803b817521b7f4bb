package normalize

import (
	"errors"
	"fmt"
	"slices"

	"github.com/acpnorm/acpnorm/internal/wire"
)

// The stored form of a session (see persist.go) is a few small records in
// package wire's form, each starting with a format byte, so that a later
// build can read what an earlier one wrote or refuse it by name.

var errCorrupt = errors.New("stored state is corrupt")

// newReader reads record what, checking its leading format byte: format,
// or one of the older formats this build still reads.
func newReader(b []byte, what string, format byte, older ...byte) *wire.Reader {
	r := &wire.Reader{B: b, Prefix: what + ": "}
	if got := r.Byte("format"); r.Err == nil && got != format && !slices.Contains(older, got) {
		r.Fail("format %d, but this build reads format %d", got, format)
	}
	return r
}

// corrupt marks a problem a Reader found as corrupt stored state.
func corrupt(err error) error { return fmt.Errorf("%w: %w", errCorrupt, err) }
