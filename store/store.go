// Package store is where a normalize engine keeps the state of its
// sessions when that state must outlive one process or be shared by
// several: a small interface, Store, with an in-process implementation
// (NewMemory) here and a Redis one in the redisstore package. The
// conformance suite in storetest holds every implementation to the same
// contract.
//
// # What is stored
//
// A session is a version number, one header record, named records and
// named text streams. Their bytes are opaque to the store: the engine
// encodes them, and decides what a record or a stream is. Streams exist so
// that growing output costs only what was added: an Append op sends the
// new bytes, not the whole text.
//
// # The contract
//
// Commit is atomic: either every part of a Change is applied, or (on any
// error) none is. It is also a compare-and-set on the session's version
// (optimistic concurrency): a commit based on version b applies only when
// the session is still at b, and gives it a version above b that the
// session never had before (NewMemory: b+1), so that a store which loses
// commits does not give their numbers again to other states; base 0
// means the session must not exist. Otherwise Commit returns ErrConflict and applies
// nothing, and the caller reloads, re-applies its input and tries again.
// Two writers of one session therefore never both win the same version,
// and the stored state is always the sequence of the winning commits.
// Delete is guarded by the version in the same way. An error that is not
// ErrConflict (a lost connection, a cancelled context) may leave it
// unknown whether a networked store applied the commit: the caller loads
// the session again before it commits anything else to it. Version reads
// only the session's version, so that a caller holding a copy can check it
// is current without loading the session.
//
// A commit that failed may or may not have been applied, unless the
// store knows it was not: Commit's error then wraps ErrNotApplied (a
// change refused before anything was sent, a server that could not be
// reached at all, or one that refused the commit before it ran). Any
// other error than ErrConflict, a timeout above all, leaves the outcome
// unknown: the commit may be applied later still (a server that was
// only slow runs what it had read). A caller that tells others about the
// commit says "not applied" only for ErrConflict and ErrNotApplied, and
// otherwise that it does not know. Either way it loads the session again
// before its next commit.
//
// A store that confirms a commit only once it is durable enough (Redis
// with replicas to wait for) returns an error wrapping ErrUnacknowledged
// for a commit it applied but cannot confirm: like a lost connection, it
// leaves the commit's fate open (a failover may keep or lose it), and the
// caller treats it as any other error. Such a store is a Confirmer too:
// a caller that answers from a session's stored state instead of from a
// commit of its own (a request sent again, found applied) confirms the
// session's commits first, so that it never answers with a commit that
// is not durable enough.
//
// Every commit sets the expiry of all of the session's data (header,
// records and streams, including those the commit did not touch) to the
// Change's TTL after the commit. A session that is not committed to for
// that long is gone as a whole: it loads as version 0 with nothing in it,
// and can be created again with base 0. No part of a session expires on
// its own.
//
// Load returns copies: a caller may keep or change a Snapshot's bytes. A
// Change's bytes are copied by Commit, or sent before it returns, so the
// caller may reuse them afterwards.
package store

import (
	"context"
	"errors"
	"time"
)

// Snapshot is the stored state of one session, as opaque records the engine encodes.
type Snapshot struct {
	Version uint64            // 0: the session does not exist
	Header  []byte            // the session record
	Records map[string][]byte // per-call records, by name (the engine's names)
	Streams map[string][]byte // text streams, by name
	// Sizes holds the lengths, by name, of the records a
	// PartLoader.LoadWithout left out of Records (nil from Load).
	Sizes map[string]int
}

// PartLoader is a Store that can load a session without the bytes of
// some of its records, and read one record alone: a caller that keeps
// records it seldom reads (what a request made, kept for when it is sent
// again) loads a session without them, and reads one when it needs it,
// rather than every one each time.
type PartLoader interface {
	// LoadWithout is Load, except that the records whose names start
	// with prefix are not in Records: Sizes holds their lengths.
	LoadWithout(ctx context.Context, session, prefix string) (*Snapshot, error)
	// LoadRecord returns the session's record name at its current
	// version: nil when the session or the record does not exist.
	LoadRecord(ctx context.Context, session, name string) ([]byte, error)
}

// Change is what one commit does to a session.
type Change struct {
	Header  []byte            // nil: unchanged
	Records map[string][]byte // a nil value deletes the record
	Streams []StreamOp        // applied in order
	TTL     time.Duration     // every key of the session expires this long after the commit (>0 required)
}

// StreamOp changes one text stream.
type StreamOp struct {
	Name   string
	Data   []byte
	Append bool // append Data to the stream (creating it); else the stream becomes Data
	Delete bool // remove the stream (Data and Append ignored)
}

// ErrConflict: the session's version is not the one the commit was based on.
var ErrConflict = errors.New("store: session version conflict (changed by another writer, expired or deleted)")

// ErrNotApplied (wrapped): the store knows the commit changed nothing:
// it was refused before it was sent, never reached the server, or the
// server refused it before it ran. See the package documentation.
var ErrNotApplied = errors.New("store: commit not applied")

// ErrUnacknowledged (wrapped): the store applied the commit but could not
// confirm it is durable (too few replicas hold it); it may survive a
// failure or be lost.
var ErrUnacknowledged = errors.New("store: commit applied but not acknowledged")

// Confirmer is a Store that confirms commits only once they are durable
// enough, and can confirm them after the fact (see ErrUnacknowledged).
type Confirmer interface {
	// Confirm returns once every commit the session has had is as
	// durable as Commit confirms a commit to be; at once when the store
	// waits for nothing. It returns an error wrapping ErrUnacknowledged
	// when it cannot confirm that (too few replicas hold them, or the
	// session is not there), and any other error when the store failed.
	Confirm(ctx context.Context, session string) error
	// Confirms reports whether Confirm has anything to do: false for a
	// store set to wait for nothing (it confirms a commit as it applies
	// it), so that a caller need not call Confirm at all.
	Confirms() bool
}

// Pinger is a Store that can say whether it answers at all, for a
// readiness check: Ping returns nil when every part of the store that
// holds sessions answers (a Redis Cluster's every master), an error
// otherwise.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Checker is a Store that can say whether it would take a commit now,
// for a readiness check, which prefers it to Pinger: a store may answer
// a PING while it refuses every write (a full Redis, a master with fewer
// replicas online than its commits wait for). Check returns nil when
// every part of the store that holds sessions takes a write as a commit
// would, an error otherwise. It writes only what expires by itself,
// outside every session, and is cheap enough to call every few seconds.
type Checker interface {
	Check(ctx context.Context) error
}

// Store keeps the state of sessions. Its methods are safe for concurrent
// use by many goroutines (and, for a shared store, many processes).
type Store interface {
	// Load returns the session at its current version (Version 0, empty maps when absent).
	Load(ctx context.Context, session string) (*Snapshot, error)
	// Version returns the session's current version (0 when absent)
	// without its state: a replica holding a cached copy checks with it
	// that the copy is current before it answers from it alone.
	Version(ctx context.Context, session string) (uint64, error)
	// Commit applies c atomically when the session is still at version base
	// (0: it must not exist), and returns the new version (above base, and
	// never one the session had before); ErrConflict otherwise, with
	// nothing applied. Any other error leaves it unknown whether c was
	// applied, unless it wraps ErrNotApplied.
	Commit(ctx context.Context, session string, base uint64, c *Change) (uint64, error)
	// Delete removes the session when it is still at version base; ErrConflict otherwise.
	Delete(ctx context.Context, session string, base uint64) error
	// Close releases the store's connections.
	Close() error
}
