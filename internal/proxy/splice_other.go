//go:build !linux

package proxy

import (
	"os"
)

// splicer is Linux's relay from pipe to pipe; elsewhere the relay copies.
type splicer struct{}

func newSplicer(*tee, func(error)) *splicer { return nil }

func spliceable(any, any) (in, out *os.File, ok bool) { return nil, nil, false }

func (*splicer) close()                                             {}
func (*splicer) relay(_, _ *os.File, _ *feeder, _ func(), _ *drain) {}

func (*splicer) spliced() int64 { return 0 }
