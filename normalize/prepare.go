package normalize

import (
	"strings"

	"github.com/acpnorm/acpnorm/internal/dialect"
)

// Prepared is a frame read ahead of its turn; see Prepare.
type Prepared struct {
	with  dialect.Dialect
	frame dialect.Frame
	err   error
}

// Prepare reads a frame the way its session will read it, without taking
// any lock, so that a program can read the next frame of a stream on
// another goroutine while the Normalizer still applies the one before
// (reading, JSON decoding and unquoting outputs, is the larger part of a
// frame's work). It reads with the dialect named (what WithDialect will
// name), else the expected one (the name WithNextDialect reported for the
// session; "" for a session not seen), else the generic one. WithPrepared
// hands the result to Feed, which uses it when the session reads the frame
// with that same dialect and reads the frame again otherwise: reading is
// pure, so the result is the same either way. Prepare returns nil when
// there is nothing to read (an empty frame, an unknown dialect name).
func Prepare(frame []byte, dialectName, expected string) *Prepared {
	if len(frame) == 0 {
		return nil
	}
	var with dialect.Dialect
	if name := strings.TrimSpace(dialectName); name != "" && !strings.EqualFold(name, dialect.Auto) {
		d, ok := dialect.Lookup(name)
		if !ok {
			return nil
		}
		with = d
	} else if d, ok := dialect.Lookup(expected); ok && expected != "" {
		with = d
	} else {
		with = dialect.Generic()
	}
	fr, err := dialect.Read(with, frame)
	return &Prepared{with: with, frame: fr, err: err}
}

// Dialect is the name of the dialect the frame was read with.
func (p *Prepared) Dialect() string { return p.with.Info().Name }

// WithPrepared gives Feed the frame as Prepare read it ahead (nil: none).
func WithPrepared(p *Prepared) FeedOption { return func(r *request) { r.prepared = p } }

// WithNextDialect has Feed report, once the frame was read, the name of the
// dialect the session reads its next frame with (what Prepare expects).
func WithNextDialect(next func(name string)) FeedOption {
	return func(r *request) { r.nextDialect = next }
}

// readWith reads msg with dialect with, using the frame read ahead when it
// was read with the same dialect.
func (r *reply) readWith(with dialect.Dialect, msg []byte) (dialect.Frame, error) {
	if p := r.ahead; p != nil {
		r.ahead = nil
		if p.with.Info().Name == with.Info().Name {
			return p.frame, p.err
		}
	}
	return dialect.Read(with, msg)
}
