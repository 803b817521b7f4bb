// Package normalize turns the raw ACP (Agent Client Protocol) traffic of
// coding agents into one provider-neutral record of every shell command
// they run: what ran, where, its live and final output, and its real exit
// status. It is the engine of the acpnormd gRPC service, for Go programs
// that would rather run it in-process than as a sidecar; the service is a
// thin adapter over it, so both behave the same.
//
// # Feeding frames
//
// A program feeds every JSON-RPC message of an agent's ACP wire, in either
// direction and in wire order, under a session id of its choosing:
//
//	n := normalize.New()
//	for msg := range wire {
//		execs, err := n.Feed("session-1", msg)
//		var fe *normalize.FrameError
//		if errors.As(err, &fe) {
//			log.Print(fe) // the frame, or a part of it, was not used
//		}
//		for _, x := range execs { ... }
//	}
//
// The dialect of the agent (its vendor quirks) is detected from what it
// sends, or named with WithDialect; Dialects lists them. The session's
// working directory comes from session/new (or session/load), or WithCwd. When the program
// knows that a prompt turn ended or a session is gone without feeding the
// frame that says so, TurnEnded and CloseSession end the calls still open.
//
// # Revisions
//
// Each time a shell tool call changes, Feed returns a ShellExec: revision
// 1, 2, 3, ... of the call, numbered per (session, tool call id) with no gap,
// never restarting. Every scalar field is set on every revision. The three
// text fields (Output, and Stdout and Stderr for agents that really separate
// them) are nil when they did not change; otherwise their Mode says how to
// apply them: Append adds the text to what the consumer holds, Replace
// replaces it (a cumulative snapshot, or the final aggregate, which never
// duplicates the live text). Text.Apply does that fold. The revision whose
// State is StateEnded is final and carries every text whole, unless the
// consumer asked for only what changed (WithFinalChanges).
//
// Text about the command (descriptions, banners, echoed command lines, exit
// headers, agent notices) is never output; real output is never dropped
// except past the text limit, which keeps the most recent tail and says
// Truncated (TotalBytes still counts all of it).
//
// # Outcomes
//
// The outcome is never read from the ACP status alone, since agents say
// "completed" for failed commands. A known exit code 0 is Succeeded; a
// known nonzero code is Failed whatever the status said, as are a signal
// and a timeout; a user's rejection or cancel is Cancelled, keeping a known
// exit code; a call that ended with no evidence either way is Unknown. An
// exit code is a pointer: nil when missing or malformed, never 0 by
// default.
//
// # Limits
//
// Everything a Normalizer holds is bounded, and the options set the bounds:
// WithTextLimit for each text field, WithMaxCallsPerSession and WithMaxCalls
// for calls, WithMaxSessions, WithMaxIDBytes for ids, WithMemoryBudget and
// WithSessionMemory for the text all calls hold, WithTTL and WithGrace for
// how long idle sessions and ended calls are kept (Sweep, or Run, releases
// them) and WithTombstones for how many released calls are remembered so
// that a late frame cannot reopen one. A limit that refuses something says
// so in a FrameError (ResourceExhausted, naming the limit by its option and
// by the matching acpnormd flag), and the rest of the frame still applies: a
// call's life (status, exit code, outcome) is never refused once the call
// is held.
//
// # Errors
//
// A frame that cannot be used, or a part of one, gives a *FrameError with a
// Code and a message that names the problem. It never disturbs the session's
// other calls or later frames, and nothing already accepted is lost.
//
// # Concurrency
//
// A Normalizer is safe for concurrent use. The requests of one session are
// applied one at a time; different sessions proceed in parallel. WithEmit
// streams what a request produces as it is made, and WithWhole lets a
// consumer that may miss revisions (a client that reconnects) get every
// text whole again.
//
// # More than one process
//
// By default a Normalizer's own memory holds every session, so a restart
// loses the open calls and another process knows nothing of them.
// WithStore puts the sessions in a shared Store (package store; a Redis
// one is in store/redisstore): any Normalizer using the same store can
// then serve any session and go on where another stopped, with revisions
// numbered on across them. The Normalizer keeps a cache of the sessions it
// serves and commits each request's changes with a compare-and-set on the
// session's version before handing its revisions on; a request that lost
// a race with another process is applied again on the new state, and one
// the store cannot take gives a FrameError with code Unavailable (not
// applied, or, when the store failed before it answered, applied or not:
// the message says which; see WithStore). A request that changes nothing still asks the store for
// the session's version, so that a stale cache is never answered from,
// unless the frame could change nothing in any state (a chat message,
// once the session's dialect is settled by its name or by choice).
// Text streams are stored by appending what each frame adds. FeedBatch
// applies several frames of a session with one commit, and
// WithSkipApplied lets a caller that numbers its requests send again, to
// any process, what it has no answer for: what was applied is skipped.
//
// # Tenants
//
// A program serving several tenants gives each a namespace: Namespace
// returns a view of the Normalizer whose requests see only that
// namespace's sessions, so the same session id of two tenants is two
// sessions, and one tenant's frames never read, change, reopen or learn
// of another's (calls, terminals, asks, tombstones, applied sequences,
// and the keys in a store). WithQuota bounds what each namespace holds, so
// that one tenant at its quota leaves the others room. acpnormd gives
// each identity (a named token, a client certificate) its namespace.
//
// # Why plain Go types
//
// ShellExec, Text and FrameError mirror the messages of the acpnorm.v1
// proto field for field, and their enums share its numbers, but they are
// plain Go structs, not the generated types: the generated package also
// holds the gRPC service stubs, so importing it would pull gRPC into every
// program that embeds this package. The service converts between the two.
// Hooks lets a program count what the Normalizer does (the service exports
// it to Prometheus) without this package importing a metrics library.
package normalize
