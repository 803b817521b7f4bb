package service

import (
	"fmt"
	"time"

	"github.com/acpnorm/acpnorm/normalize"
	"github.com/acpnorm/acpnorm/store"
)

// Config holds the limits of a Service. The zero value is not usable; start
// from DefaultConfig.
type Config struct {
	// TextLimit bounds each text field of a call, in bytes; the most recent
	// tail is kept.
	TextLimit int
	// MaxCallsPerSession bounds the calls one session holds at once (ended
	// calls in their grace period count).
	MaxCallsPerSession int
	// MaxCalls bounds the calls of all sessions together.
	MaxCalls int
	// MaxSessions bounds the sessions held at once. Only a frame that
	// reads as a valid ACP message creates one.
	MaxSessions int
	// MaxIDBytes bounds session ids, tool call ids, terminal ids and
	// JSON-RPC request ids.
	MaxIDBytes int
	// TTL is how long a session may go without a frame before it is
	// evicted with all its calls. A quiet call of a busy session is kept.
	TTL time.Duration
	// Grace is how long an ended call is kept to absorb late frames.
	Grace time.Duration
	// Tombstones bounds how many released calls are remembered, so that a
	// late frame about one is refused instead of reopening it; the oldest
	// are forgotten first.
	Tombstones int
	// MemoryBudget bounds the bytes of text all calls hold together (their
	// output buffers and the strings they keep). An update that could take
	// more is not held (RESOURCE_EXHAUSTED); the call's life still applies.
	MemoryBudget int
	// SessionMemory is the share of MemoryBudget one session may hold; 0
	// means an eighth of it.
	SessionMemory int
	// SendQueue is the number of responses a stream may queue for a slow
	// client before its receive loop stops reading (backpressure).
	SendQueue int
	// SendQueueBytes bounds the bytes of the responses a stream queues
	// for a slow client the same way (one response is queued whatever its
	// size); the answers of a request waiting outside their session's
	// lock may take as many again.
	SendQueueBytes int
	// SendTimeout is how long one response may wait for a client that
	// reads nothing before the stream is ended (RESOURCE_EXHAUSTED), so a
	// stalled client holds no memory (at most SendTimeout/8 later, see
	// waitClock).
	SendTimeout time.Duration
	// StreamIdleTimeout ends a Normalize stream (UNAVAILABLE) that has
	// waited this long for a request (at most StreamIdleTimeout/8 later,
	// see waitClock), so that streams opened and left idle do not hold the
	// stream slots for ever; 0 keeps them.
	StreamIdleTimeout time.Duration
	// Quota bounds what one identity's sessions may hold together (see
	// normalize.WithQuota); a zero field sets no bound beyond the limits
	// above.
	Quota normalize.Quota
	// Store holds the sessions' state so that several servers can share
	// them (see normalize.WithStore); nil keeps it in this process only.
	Store store.Store
}

// DefaultConfig returns the limits used when nothing else is configured.
func DefaultConfig() Config {
	return Config{
		TextLimit:          256 << 10,
		MaxCallsPerSession: 1024,
		MaxCalls:           65536,
		MaxSessions:        16384,
		MaxIDBytes:         256,
		TTL:                10 * time.Minute,
		Grace:              30 * time.Second,
		Tombstones:         65536,
		MemoryBudget:       DefaultMemoryBudget(),
		SendQueue:          64,
		SendQueueBytes:     DefaultSendQueueBytes,
		SendTimeout:        30 * time.Second,
		StreamIdleTimeout:  15 * time.Minute,
	}
}

// Validate reports the first limit that cannot work.
func (c Config) Validate() error {
	if err := normalize.Check(c.limits()...); err != nil {
		return err
	}
	switch {
	case c.SendQueue < 1:
		return fmt.Errorf("send queue %d is below 1", c.SendQueue)
	case c.SendQueueBytes < 1:
		return fmt.Errorf("send queue bytes %d is below 1", c.SendQueueBytes)
	case c.SendTimeout <= 0:
		return fmt.Errorf("send timeout %v is not positive", c.SendTimeout)
	case c.StreamIdleTimeout < 0:
		return fmt.Errorf("stream idle timeout %v is negative", c.StreamIdleTimeout)
	}
	return nil
}

// limits are the engine's options for the limits of c.
func (c Config) limits() []normalize.Option {
	return []normalize.Option{
		normalize.WithTextLimit(c.TextLimit),
		normalize.WithMaxCallsPerSession(c.MaxCallsPerSession),
		normalize.WithMaxCalls(c.MaxCalls),
		normalize.WithMaxSessions(c.MaxSessions),
		normalize.WithMaxIDBytes(c.MaxIDBytes),
		normalize.WithTTL(c.TTL),
		normalize.WithGrace(c.Grace),
		normalize.WithTombstones(c.Tombstones),
		normalize.WithMemoryBudget(c.MemoryBudget),
		normalize.WithSessionMemory(c.SessionMemory),
		normalize.WithQuota(c.Quota),
		normalize.WithStore(countTrips(c.Store)),
	}
}

// DefaultSendQueueBytes is the default of Config.SendQueueBytes: room for
// a few revisions with texts at the default text limit.
const DefaultSendQueueBytes = 8 << 20

// DefaultMemoryBudget returns the default byte budget for held text (see
// normalize.DefaultMemoryBudget).
var DefaultMemoryBudget = normalize.DefaultMemoryBudget
