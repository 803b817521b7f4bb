package normalize

import (
	"errors"
	"fmt"
	"slices"

	"github.com/acpnorm/acpnorm/internal/accum"
	"github.com/acpnorm/acpnorm/internal/wire"
)

// The stored form of a session (see persist.go) is a few small records in
// package wire's form, each starting with a format byte, so that a later
// build can read what an earlier one wrote or refuse it by name.

var errCorrupt = errors.New("stored state is corrupt")

// errNewer marks stored state in a format later than this build's: a
// newer build sharing the store (a rolling upgrade) wrote it. It is not
// corrupt: it is left as it is, and the request is not applied here.
var errNewer = errors.New("stored by a newer build of acpnorm")

// newerFormats is how far past this build's format a record's format
// byte is read as a newer build's: formats go up by one a change, so a
// byte far beyond is corrupt, and its session deleted, not kept for ever.
const newerFormats = 8

// newReader reads record what, checking its leading format byte: format,
// or one of the older formats this build still reads. A format a little
// later (newerFormats) fails with errNewer.
func newReader(b []byte, what string, format byte, older ...byte) *wire.Reader {
	r := &wire.Reader{B: b, Prefix: what + ": "}
	if got := r.Byte("format"); r.Err == nil && got > format && int(got) <= int(format)+newerFormats {
		r.Fail("%w: format %d, but this build reads formats up to %d", errNewer, got, format)
	} else if r.Err == nil && got != format && !slices.Contains(older, got) {
		r.Fail("format %d, but this build reads format %d", got, format)
	}
	return r
}

// corrupt marks a problem a Reader found as corrupt stored state, unless
// it is state a newer build wrote (errNewer, accum.ErrNewerState).
func corrupt(err error) error {
	if errors.Is(err, errNewer) || errors.Is(err, accum.ErrNewerState) {
		return err
	}
	return fmt.Errorf("%w: %w", errCorrupt, err)
}
