// A session that survives failures: the resend protocol of
// docs/contract.md, the same behaviour as the Go package
// github.com/acpnorm/acpnorm/client.
//
// A Session numbers the requests of one ACP session (frames, TurnEnded,
// SessionClosed) 1, 2, 3, ... and streams them with
// StreamOptions.skip_applied_sequences, so that anything sent again is
// applied once. When a stream breaks or a request is refused (FrameError
// UNAVAILABLE: not applied, or with an outcome the store did not know, which
// the resend settles), it waits (exponential backoff with jitter,
// bounded), moves to the next address and sends again every request it has
// no answer for. The first frame on each new stream states what it holds
// (AcpFrame.held_revisions), so a server whose store lost commits answers
// DATA_LOSS; the Session then sends the session's frames again from the
// first, and ends with the same finals. Revisions are folded with Folder;
// one received twice is folded once.

import { clone, create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import type { Http2SessionManager } from "@connectrpc/connect-node";
import { FoldError, Folder, keyOf } from "./fold.js";
import {
  AcpFrameSchema,
  Direction,
  FrameErrorSchema,
  NormalizeRequestSchema,
  NormalizerService,
  ShellState,
  type FrameError,
  type NormalizeRequest,
  type ShellExec,
} from "./gen/acpnorm/v1/normalizer_pb.js";
import { grpcTransport, type ConnectOptions, type NormalizerClient } from "./index.js";
import { LEFT_OUT, leftOut } from "./leftout.js";

/** The trailer in which acpnormd counts the requests of a stream it applied. */
const TRAILER_APPLIED = "acpnorm-requests-applied";

/**
 * Bounds the calls held_revisions names: acpnormd checks up to 2 x
 * --max-calls-per-session of them (2048 by default), the calls the session
 * has first, and applies the frame for a claim of up to 64 x
 * --max-calls-per-session calls (a build before that bound took any
 * number; one older still refused a claim of more than it checks).
 */
const MAX_HELD = 1024;

/** Bounds how far back #heldFrom looks for a frame. */
const MAX_HELD_BACK = 64;

/**
 * How gRPC words the end of a stream whose message was over the server's
 * limit; TOO_LARGE reads the message's size and the limit, in bytes, after
 * them (the words hold no character special in a RegExp).
 */
const TOO_LARGE_WORDS = "larger than max";
const TOO_LARGE = new RegExp(`${TOO_LARGE_WORDS} \\((\\d+) vs\\. (\\d+)\\)`);


/** Options of a SessionClient: how to reach the servers, and the bounds. */
export interface SessionClientOptions extends ConnectOptions {
  /**
   * The wait before reconnecting: minMs after the first failure, doubling
   * with each failure in a row up to maxMs, each wait drawn at random
   * between half and all of it. Default 50 ms and 2 s.
   */
  backoff?: { minMs: number; maxMs: number };
  /**
   * What each open Session keeps to rebuild its session: at most this many
   * requests (default 10 000) and bytes of their messages (default 64 MiB).
   * A request that would pass either makes the Session drop its oldest
   * answered requests first (stats().dropped), after which a loss cannot
   * be rebuilt (CannotRebuildError); send() throws a SessionFullError when
   * the requests not answered yet fill it. The Session also ends its
   * stream once half of either is unanswered, so that the server's trailer
   * answers frames that made no revision.
   */
  maxRequests?: number;
  maxBytes?: number;
}

/** Options of one Session. */
export interface SessionOptions {
  /** The dialect of the session's frames ("auto" by default). */
  dialect?: string;
  /** The session's working directory, for frames that lack session/new. */
  cwd?: string;
  /**
   * Called with each revision folded in, in the server's order; a revision
   * received again (after a reconnect) is not given twice.
   */
  onRevision?: (revision: ShellExec) => void;
  /**
   * Called once with each FrameError the server answered about a request of
   * the session. Those the Session handles itself (ALREADY_EXISTS for a
   * request sent again, UNAVAILABLE, DATA_LOSS) are not given.
   */
  onFrameError?: (error: FrameError) => void;
}

/** What a Session went through. */
export interface SessionStats {
  /** Streams opened, and how many of them followed one that broke. */
  streams: number;
  reconnects: number;
  /** Requests sent again on a new stream. */
  resent: number;
  /** Requests refused with UNAVAILABLE (not applied, or with an unknown outcome). */
  notApplied: number;
  /**
   * DATA_LOSS answers, each followed by a rebuild from the first request,
   * or, once dropped is above 0, by the Session giving up (CannotRebuildError).
   */
  losses: number;
  /** Revisions received again and folded once. */
  duplicates: number;
  /**
   * Requests no longer kept: answered ones, dropped oldest first so that a
   * new request fits within maxRequests and maxBytes. Once it is above 0
   * the session can no longer be rebuilt from its first request after a loss.
   */
  dropped: number;
}

/**
 * send() or turnEnded() refused: the Session holds as many requests, or
 * bytes, not answered yet as its bound allows.
 */
export class SessionFullError extends Error {
  override name = "SessionFullError";
}

/**
 * The server lost the session (DATA_LOSS) after the Session had dropped its
 * first requests to stay within its bound (maxRequests, maxBytes), so it
 * could not send them again to rebuild it: the Session gave up. What it
 * folded before stays readable.
 */
export class CannotRebuildError extends Error {
  override name = "CannotRebuildError";
}

/**
 * A Session's id, dialect or working directory cannot go in a request: it
 * holds a lone UTF-16 surrogate, which has no UTF-8 form (a protobuf string
 * is UTF-8). The Session gives up with it at once: send(), turnEnded() and
 * close() throw it.
 */
export class InvalidSessionError extends Error {
  override name = "InvalidSessionError";
}

/** The Session (or its SessionClient) was closed. */
export class SessionClosedError extends Error {
  override name = "SessionClosedError";
}

/**
 * Connections to one acpnormd fleet, and the Sessions streamed over them.
 * Each address is `host:port` (or a base URL, as connect takes); a name
 * behind a load balancer is one address.
 */
export class SessionClient {
  readonly #conns: { addr: string; client: NormalizerClient; manager: Http2SessionManager }[];
  readonly #abort = new AbortController();
  /** @internal */ readonly minMs: number;
  /** @internal */ readonly maxMs: number;
  /** @internal */ readonly maxRequests: number;
  /** @internal */ readonly maxBytes: number;
  /** @internal */ readonly maxRebuilds = 8;

  constructor(addrs: string[], opts: SessionClientOptions = {}) {
    if (addrs.length === 0) throw new Error("SessionClient: no address");
    this.minMs = opts.backoff?.minMs ?? 50;
    this.maxMs = opts.backoff?.maxMs ?? 2000;
    if (!(this.minMs > 0 && this.maxMs >= this.minMs)) {
      throw new Error(`SessionClient: backoff ${this.minMs} ms to ${this.maxMs} ms: want 0 < minMs <= maxMs`);
    }
    this.maxRequests = opts.maxRequests ?? 10_000;
    this.maxBytes = opts.maxBytes ?? 64 << 20;
    if (!(this.maxRequests > 0 && this.maxBytes > 0)) {
      throw new Error(`SessionClient: bounds ${this.maxRequests} requests, ${this.maxBytes} bytes: want both above 0`);
    }
    // A server that stops answering without closing the connection is
    // found out by pings: after 10 s without a read, 5 s for the answer.
    this.#conns = addrs.map((addr) => {
      const { transport, sessionManager } = grpcTransport(addr, opts, { pingIntervalMs: 10_000, pingTimeoutMs: 5_000 });
      return { addr, client: createClient(NormalizerService, transport), manager: sessionManager };
    });
  }

  /** Starts a session with this id; nothing is sent until send(). */
  session(id: string, opts: SessionOptions = {}): Session {
    if (!id) throw new Error("SessionClient.session: the session id is empty");
    return new Session(this, id, opts);
  }

  /** Ends every Session's streams and closes the connections. */
  close(): void {
    this.#abort.abort(new SessionClosedError("acpnorm client: closed"));
    for (const c of this.#conns) c.manager.abort();
  }

  /** @internal */ get signal(): AbortSignal {
    return this.#abort.signal;
  }

  /** @internal The i-th address, round the list. */
  conn(i: number) {
    return this.#conns[i % this.#conns.length]!;
  }

  /** @internal Sleeps the backoff of the n-th failure in a row (n from 0). */
  async wait(n: number, signal: AbortSignal): Promise<void> {
    let d = this.minMs;
    for (let i = 0; i < n && d < this.maxMs; i++) d *= 2;
    d = Math.min(d, this.maxMs);
    d = d / 2 + Math.random() * (d / 2);
    await new Promise<void>((ok, fail) => {
      if (signal.aborted) return fail(signal.reason);
      const onAbort = () => {
        clearTimeout(t);
        fail(signal.reason);
      };
      const t = setTimeout(() => {
        signal.removeEventListener("abort", onAbort);
        ok();
      }, d);
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }
}

/** Ends a stream that should be opened again (a request not applied, or unanswered). */
class Retry extends Error {}

/**
 * A DATA_LOSS answer; fatal after too many in a row, or once requests were
 * dropped (dropped > 0: the session cannot be rebuilt from its first, which
 * is fatal too).
 */
class Lost extends Error {
  constructor(
    readonly fe: FrameError,
    readonly fatal: boolean, // lost too many times in a row
    readonly dropped = 0,
    bound = "",
  ) {
    super(
      dropped > 0
        ? `the server lost the session, and it cannot be rebuilt: its first ${dropped} requests were no longer kept ` +
            `(answered, then dropped to stay within the bound of ${bound}; SessionClientOptions.maxRequests, maxBytes raise it); ` +
            `the server said: ${fe.message}`
        : fatal
          ? `the session was lost in the store too many times in a row, last: ${fe.message}`
          : fe.message,
    );
  }
}

/**
 * One ACP session streamed to acpnormd, surviving failures: send() its
 * JSON-RPC messages, close() at the end, and read calls() for the folded
 * state of each shell call. See SessionClient.session.
 */
export class Session {
  readonly id: string;
  readonly #c: SessionClient;
  readonly #opts: SessionOptions;
  readonly #abort = new AbortController();
  /**
   * The sequence before the first request: the session's i-th request
   * (from 0) has #base + i + 1.
   * The server skips the sequences of a session it applied before
   * (skipAppliedSequences), so a Session that numbered from 1 again, in a
   * process started after one that used the same session id and died,
   * would have its new frames skipped as sent before. Numbered from the
   * clock (microseconds since 1970, read to the millisecond), a later
   * Session's requests come after an earlier one's.
   */
  readonly #base = BigInt(Date.now()) * 1000n;
  /**
   * The first #dropped requests were answered and are no longer kept (see
   * #makeRoom; stats().dropped); #reqs holds the rest, #reqs[0] being the
   * #dropped-th.
   * #confirmed, #highSent, #lossAt and the indexes a stream uses count every
   * request, dropped or kept.
   */
  #dropped = 0;
  #reqs: NormalizeRequest[] = [];
  #bytes = 0; // of the messages of #reqs
  #confirmed = 0; // the requests before the #confirmed-th are answered (see #answer)
  /**
   * The bytes of the messages of the requests from the #confirmed-th, kept
   * in step with #confirmed by #answer, so that #halfUnanswered, asked on
   * every send, need not add them up.
   */
  #unanswered = 0;
  #closing = false; // SessionClosed is queued
  #flushing = false; // a waiter wants every request answered: end the stream once all is sent
  /**
   * Ends the stream once all is sent, as #flushing does, so that its
   * trailer answers requests that made no revision (see #queue).
   */
  #cycle = false;
  #err: Error | undefined;
  #closed = false; // released after close()
  readonly #folder = new Folder();
  readonly #seenErrs = new Set<string>();
  readonly #errs: FrameError[] = [];
  /** What stats() says, but dropped: #dropped. */
  readonly #stats: Omit<SessionStats, "dropped"> = { streams: 0, reconnects: 0, resent: 0, notApplied: 0, losses: 0, duplicates: 0 };
  #highSent = 0; // the most requests ever sent, to count those sent again
  #rebuilds = 0; // DATA_LOSS answers since the session last got past #lossAt
  #lossAt = 0;
  #lastErr: string | undefined; // why the last stream failed
  #wakers: (() => void)[] = [];

  /** @internal Use SessionClient.session. */
  constructor(c: SessionClient, id: string, opts: SessionOptions) {
    this.#c = c;
    this.id = id;
    this.#opts = opts;
    const invalid = invalidField(id, opts);
    if (invalid !== undefined) {
      // Every request would carry it, and protobuf-es would write U+FFFD in
      // place of the lone surrogate (another session id, cwd or dialect
      // than the caller's): say so at once, and send nothing.
      this.#giveUp(invalid);
      return;
    }
    const onClientClose = () => this.#giveUp(new SessionClosedError(`acpnorm client: session ${JSON.stringify(id)}: closed`));
    if (c.signal.aborted) onClientClose();
    else c.signal.addEventListener("abort", onClientClose, { once: true });
    void this.#run()
      .catch((e: unknown) =>
        this.#giveUp(new Error(`acpnorm client: session ${JSON.stringify(id)}: ${e instanceof Error ? e.message : String(e)}`, { cause: e })),
      )
      .finally(() => c.signal.removeEventListener("abort", onClientClose));
  }

  /**
   * Queues one JSON-RPC message of the session (direction: which way it
   * went, UNSPECIFIED when unknown) and returns: it is sent, and sent again
   * until answered, in the background. Throws when the Session gave up
   * (that error), was closed (SessionClosedError) or holds its bound of
   * requests not answered yet (SessionFullError).
   */
  send(direction: Direction, message: Uint8Array | string): void {
    const msg = typeof message === "string" ? new TextEncoder().encode(message) : message;
    this.#queue(msg.length, (sequence) =>
      create(NormalizeRequestSchema, {
        kind: {
          case: "frame",
          value: {
            sessionId: this.id,
            dialect: this.#opts.dialect ?? "auto",
            cwd: this.#opts.cwd ?? "",
            sequence,
            direction,
            message: msg,
          },
        },
      }),
    );
  }

  /**
   * Says the prompt turn ended (cancelled: after session/cancel), for agents
   * whose turn end the session's frames do not show.
   */
  turnEnded(cancelled = false): void {
    this.#queue(0, (sequence) =>
      create(NormalizeRequestSchema, { kind: { case: "turnEnded", value: { sessionId: this.id, sequence, cancelled } } }),
    );
  }

  /**
   * Waits until every request queued so far was answered. Rejects with the
   * error the Session gave up with, or when signal aborts (the Session then
   * gives up: use a signal that aborts only when waiting is pointless).
   */
  async flush(signal?: AbortSignal): Promise<void> {
    for (;;) {
      if (this.#err !== undefined) {
        if (this.#closed) return;
        throw this.#err;
      }
      if (this.#confirmed === this.#total()) {
        if (this.#closing) this.#release();
        return;
      }
      this.#flushing = true;
      this.#notify(); // wakes the stream, to end it once all is sent
      const changed = this.#changed();
      if (signal !== undefined) {
        if (signal.aborted) return this.#abortWait(signal);
        let onAbort!: () => void;
        const aborted = new Promise<"aborted">((ok) => {
          onAbort = () => ok("aborted");
          signal.addEventListener("abort", onAbort, { once: true });
        });
        const r = await Promise.race([changed, aborted]);
        signal.removeEventListener("abort", onAbort);
        if (r === "aborted") return this.#abortWait(signal);
      } else {
        await changed;
      }
    }
  }

  #abortWait(signal: AbortSignal): never {
    const why = signal.reason instanceof Error ? signal.reason.message : String(signal.reason);
    const last = this.#lastErr === undefined ? "" : ` (the last stream: ${this.#lastErr})`;
    const err = new Error(`acpnorm client: session ${JSON.stringify(this.id)}: waiting for answers: ${why}${last}`, {
      cause: signal.reason,
    });
    this.#giveUp(err);
    throw err;
  }

  /**
   * Sends SessionClosed, waits until every request was answered, and
   * releases what the Session kept to rebuild. Rejects as flush() does.
   * calls() and frameErrors() stay readable.
   */
  async close(signal?: AbortSignal): Promise<void> {
    if (!this.#closing && this.#err === undefined) {
      this.#queue(
        0,
        (sequence) => create(NormalizeRequestSchema, { kind: { case: "sessionClosed", value: { sessionId: this.id, sequence } } }),
        true,
      );
      this.#closing = true;
    }
    await this.flush(signal);
  }

  /** The folded state of every call, in the order each was first seen. Read them only. */
  calls(): ShellExec[] {
    return this.#folder.calls().map((k) => this.#folder.state(k)!);
  }

  /** The folded state of one call, or undefined when none of its revisions arrived. */
  call(toolCallId: string): ShellExec | undefined {
    return this.#folder.state({ sessionId: this.id, toolCallId });
  }

  /** The FrameErrors onFrameError was given, in order. */
  frameErrors(): FrameError[] {
    return [...this.#errs];
  }

  /** What the Session went through so far. */
  stats(): SessionStats {
    return { ...this.#stats, dropped: this.#dropped };
  }

  /** The error the Session gave up with, or undefined (also after a clean close). */
  get error(): Error | undefined {
    return this.#closed ? undefined : this.#err;
  }

  #queue(size: number, make: (sequence: bigint) => NormalizeRequest, last = false): void {
    if (this.#err !== undefined) throw this.#err;
    if (this.#closing) throw new SessionClosedError(`acpnorm client: session ${JSON.stringify(this.id)} was closed`);
    // The closing request (last) is never refused: it releases the rest.
    if (!last && !this.#makeRoom(size)) {
      // The stream ends once all is sent (#cycle), so that its trailer
      // answers what made no revision, and the caller's next try fits.
      this.#cycle = true;
      this.#notify();
      // The unanswered requests are what fill the bound (answered ones
      // would have been dropped): name them, not every request kept.
      throw new SessionFullError(
        `acpnorm client: session ${JSON.stringify(this.id)} has ${this.#total() - this.#confirmed} requests not answered yet ` +
          `(${this.#unanswered} bytes of messages), and with this one of ${size} bytes they would pass the bound of ` +
          `${this.#c.maxRequests} requests, ${this.#c.maxBytes} bytes (SessionClientOptions.maxRequests, maxBytes); ` +
          `try again once answers come, or raise the bound`,
      );
    }
    this.#reqs.push(make(this.#base + BigInt(this.#total() + 1)));
    this.#bytes += size;
    this.#unanswered += size;
    if (!this.#cycle && this.#halfUnanswered()) this.#cycle = true;
    this.#notify();
  }

  /** How many requests the session has, dropped or kept. */
  #total(): number {
    return this.#dropped + this.#reqs.length;
  }

  /** The session's i-th request, from 0 (i >= #dropped). */
  #req(i: number): NormalizeRequest {
    return this.#reqs[i - this.#dropped]!;
  }

  /**
   * Makes a request of size bytes fit within the bound, dropping the oldest
   * answered requests. A long session would otherwise end at its bound
   * however healthy; what is dropped cannot be sent again, so a later loss
   * (DATA_LOSS) cannot be rebuilt (CannotRebuildError). Returns false, and
   * drops nothing, when the requests not answered yet leave no room: that
   * is backpressure.
   */
  #makeRoom(size: number): boolean {
    const n = this.#reqs.length;
    let b = this.#bytes;
    let k = 0;
    while (n - k >= this.#c.maxRequests || b + size > this.#c.maxBytes) {
      if (this.#dropped + k >= this.#confirmed) return false;
      b -= msgSize(this.#reqs[k]!);
      k++;
    }
    if (k > 0) {
      this.#reqs.splice(0, k);
      this.#bytes = b;
      this.#dropped += k;
    }
    return true;
  }

  /**
   * Whether the requests not answered yet take half the bound, of requests
   * or of bytes. A stream answers a request when a later one made a
   * revision, or in its trailer: frames that make no revision (an agent
   * streaming message chunks) are answered only when the stream ends, so
   * the Session ends it then (#cycle), and what it answers can be dropped.
   */
  #halfUnanswered(): boolean {
    return 2 * (this.#total() - this.#confirmed) >= this.#c.maxRequests || 2 * this.#unanswered >= this.#c.maxBytes;
  }

  /**
   * Sets #confirmed to n, the requests before the n-th being answered, and
   * keeps #unanswered in step: each request is passed over once as
   * #confirmed moves on, and again only after a rebuild (a DATA_LOSS sets it
   * back to 0 while nothing is dropped). Adding up the unanswered requests
   * on every send instead made a stretch of frames without revisions
   * quadratic once the Session kept near its byte bound.
   */
  #answer(n: number): void {
    // Only kept requests are counted: #confirmed never goes below #dropped
    // while requests are kept (#makeRoom drops answered ones only).
    const lo = Math.max(Math.min(this.#confirmed, n), this.#dropped);
    const hi = Math.min(Math.max(this.#confirmed, n), this.#total());
    let b = 0;
    for (let i = lo; i < hi; i++) b += msgSize(this.#req(i));
    this.#unanswered += n > this.#confirmed ? -b : b;
    this.#confirmed = n;
  }

  /** Drops the requests kept to rebuild a closed, answered session. */
  #release(): void {
    this.#reqs = []; // #dropped stays what stats().dropped says: what is let go here is not counted there
    this.#confirmed = 0;
    this.#bytes = 0;
    this.#unanswered = 0;
    this.#closed = true;
    this.#err = new SessionClosedError(`acpnorm client: session ${JSON.stringify(this.id)} was closed`);
    this.#abort.abort(this.#err);
    this.#notify();
  }

  /** A promise that resolves at the next #notify. */
  #changed(): Promise<void> {
    return new Promise((ok) => this.#wakers.push(ok));
  }

  /** Wakes every waiter: the sender, the run loop, flush(). */
  #notify(): void {
    const w = this.#wakers;
    this.#wakers = [];
    for (const f of w) f();
  }

  #giveUp(err: Error): void {
    if (this.#err === undefined) {
      this.#err = err;
      this.#notify();
    }
    if (!this.#abort.signal.aborted) this.#abort.abort(err);
  }

  /** Waits for a #notify or for signal to abort. */
  async #waitChange(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    let onAbort!: () => void;
    const aborted = new Promise<void>((ok) => {
      onAbort = ok;
      signal.addEventListener("abort", onAbort, { once: true });
    });
    await Promise.race([this.#changed(), aborted]);
    signal.removeEventListener("abort", onAbort);
  }

  /** Sends the session's requests, stream after stream, until closed and answered or given up. */
  async #run(): Promise<void> {
    const stop = this.#abort.signal;
    let failures = 0;
    let addr = 0;
    for (;;) {
      if (this.#err !== undefined) return;
      if (this.#confirmed >= this.#total()) {
        await this.#waitChange(stop);
        continue;
      }
      let progress = false;
      let err: unknown;
      try {
        progress = await this.#stream(addr);
        failures = 0;
        continue;
      } catch (e) {
        err = e;
        progress = e instanceof StreamEnd && e.progress;
        if (e instanceof StreamEnd) err = e.cause;
      }
      if (this.#err !== undefined) return;
      if (err instanceof Lost && (err.fatal || err.dropped > 0)) {
        const msg = `acpnorm client: session ${JSON.stringify(this.id)}: ${this.#c.conn(addr).addr}: ${err.message}`;
        this.#giveUp(err.dropped > 0 ? new CannotRebuildError(msg, { cause: err.fe }) : new Error(msg, { cause: err.fe }));
        return;
      }
      if (!(err instanceof ConnectError || err instanceof Retry || err instanceof Lost)) {
        // Not the stream's: an onRevision or onFrameError that threw.
        const why = err instanceof Error ? err.message : String(err);
        this.#giveUp(new Error(`acpnorm client: session ${JSON.stringify(this.id)}: ${why}`, { cause: err }));
        return;
      }
      if (err instanceof ConnectError && fatal(err) && !this.#leaveOutTooLarge(err)) {
        this.#giveUp(
          new ConnectError(`session ${JSON.stringify(this.id)}: ${this.#c.conn(addr).addr}: ${err.rawMessage}`, err.code, err.metadata, undefined, err),
        );
        return;
      }
      if (progress) failures = 0;
      this.#stats.reconnects++;
      this.#lastErr = `${this.#c.conn(addr).addr}: ${err instanceof Error ? err.message : String(err)}`;
      addr++; // a stream that broke moves to the next address
      try {
        await this.#c.wait(failures, stop);
      } catch {
        return; // given up meanwhile
      }
      failures++;
    }
  }

  /**
   * The highest revision held of each call: every open call, then the
   * ended ones, latest first, up to MAX_HELD.
   */
  #held(): { [toolCallId: string]: number } {
    const held: { [toolCallId: string]: number } = {};
    const keys = this.#folder.calls();
    let n = 0;
    for (const ended of [false, true]) {
      for (let i = keys.length - 1; i >= 0 && n < MAX_HELD; i--) {
        const x = this.#folder.state(keys[i]!)!;
        if ((x.state === ShellState.ENDED) === ended) {
          held[x.toolCallId] = x.revision;
          n++;
        }
      }
    }
    return held;
  }

  /**
   * The index of the request a new stream starts from: the first one not
   * answered, or, when that one is a turn end or a close (they carry no
   * held fields) after answered requests, the last frame before it, sent
   * again to state what is held. Without it a stream that starts with a
   * turn end or a close after the server lost the session (restarted
   * without a store, a failover) would apply them to an empty session: the
   * open calls would never end, and nobody would know.
   */
  #heldFrom(): number {
    const from = this.#confirmed;
    if (from === 0 || from >= this.#total() || this.#req(from).kind.case === "frame") return from;
    // A frame dropped (#makeRoom) is not there to send: as when none is found.
    for (let k = from - 1; k >= this.#dropped && from - k <= MAX_HELD_BACK; k--) {
      if (this.#req(k).kind.case === "frame") return k;
    }
    return from;
  }

  /**
   * Handles a stream gRPC ended because a request was over the server's
   * message limit (docs/contract.md: the client resends the rest, leaving
   * that one out). The first unanswered frame over the limit is reported as
   * a FrameError RESOURCE_EXHAUSTED naming its sequence, and sent as
   * LEFT_OUT instead, so that the requests after it are applied. Returns
   * whether it found one; without one the error is fatal.
   */
  #leaveOutTooLarge(err: ConnectError): boolean {
    const m = TOO_LARGE.exec(err.rawMessage);
    if (err.code !== Code.ResourceExhausted || m === null) return false;
    const limit = Number.parseInt(m[2]!, 10);
    if (!Number.isSafeInteger(limit)) return false;
    for (let i = this.#confirmed; i < this.#total(); i++) {
      const req = this.#req(i);
      if (req.kind.case !== "frame") continue;
      const size = toBinary(NormalizeRequestSchema, req).length;
      if (size <= limit) continue;
      const f = req.kind.value;
      this.#bytes += LEFT_OUT.length - f.message.length;
      this.#unanswered += LEFT_OUT.length - f.message.length; // i >= #confirmed
      this.#reqs[i - this.#dropped] = leftOut(f);
      this.#report(
        create(FrameErrorSchema, {
          sessionId: this.id,
          sequence: f.sequence,
          code: Code.ResourceExhausted,
          message:
            `request ${f.sequence} (a frame of ${size} bytes) is larger than the server's limit of ${limit} bytes ` +
            `(acpnormd --max-message-bytes): it was not applied, and the Session sends the requests after it without it`,
        }),
      );
      return true;
    }
    return false;
  }

  /**
   * Runs one stream to the addr-th address: sends every request from the
   * first unanswered one (or the frame before it, see #heldFrom) and folds
   * what comes back. Resolves when it ended with every request sent
   * answered (a flush), with whether any request got answered on it (from
   * the first unanswered one: the frame sent again does not count);
   * otherwise throws a StreamEnd saying why it ended.
   */
  async #stream(addr: number): Promise<boolean> {
    const ctl = new AbortController();
    const stop = this.#abort.signal;
    const onStop = () => ctl.abort(stop.reason);
    stop.addEventListener("abort", onStop, { once: true });
    this.#stats.streams++;
    const answered = this.#confirmed;
    let from = this.#heldFrom();
    const sentBefore = this.#highSent;
    let sent = 0;
    let closedSend = false;
    let trailer: Headers | undefined;
    let header: Headers | undefined;
    const self = this;
    async function* requests(): AsyncGenerator<NormalizeRequest> {
      yield create(NormalizeRequestSchema, { kind: { case: "options", value: { skipAppliedSequences: true } } });
      let heldSent = false;
      for (;;) {
        if (self.#err !== undefined || ctl.signal.aborted) return;
        let i = from + sent;
        if (i < self.#dropped) {
          // Requests answered before this stream started, sent again to
          // state what is held (#heldFrom), were dropped meanwhile: go on
          // from the first kept, as if the stream had started there (the
          // trailer counts from `from`).
          from += self.#dropped - i;
          i = self.#dropped;
        }
        if (i < self.#total()) {
          let req = self.#req(i);
          if (req.kind.case === "frame" && !heldSent) {
            // The first frame on a stream states what is held: the
            // calls' revisions, and the highest sequence answered (the
            // requests before the #confirmed-th are; 0 again while a
            // rebuild starts from the first), which finds a loss of frames
            // that made no revision.
            heldSent = true;
            const held = self.#held();
            if (Object.keys(held).length > 0 || self.#confirmed > 0) {
              const f = clone(AcpFrameSchema, req.kind.value);
              f.heldRevisions = held;
              if (self.#confirmed > 0) f.heldSequence = self.#base + BigInt(self.#confirmed);
              req = create(NormalizeRequestSchema, { kind: { case: "frame", value: f } });
            }
          }
          if (i < self.#highSent) self.#stats.resent++;
          sent++;
          self.#highSent = Math.max(self.#highSent, from + sent);
          yield req;
          continue;
        }
        if (self.#flushing || self.#cycle) {
          closedSend = true;
          return;
        }
        await self.#waitChange(ctl.signal);
      }
    }
    let rerr: unknown;
    try {
      const responses = this.#c.conn(addr).client.normalize(requests(), {
        signal: ctl.signal,
        onHeader: (h) => {
          header = h;
        },
        onTrailer: (t) => {
          trailer = t;
        },
      });
      for await (const res of responses) {
        if (res.kind.case === "shellExec") {
          const x = res.kind.value;
          this.#confirm(x.sequence);
          this.#apply(x);
        } else if (res.kind.case === "frameError") {
          this.#frameError(res.kind.value, sentBefore);
        }
      }
    } catch (e) {
      rerr = e;
    } finally {
      stop.removeEventListener("abort", onStop);
      ctl.abort();
    }
    let p = this.#confirmed > answered;
    // A stream the server ended (normally, or with an error: on shutdown,
    // or idle past --stream-idle-timeout) carries the count of the
    // requests it applied and answered, the options first, stopping at one
    // not applied. A stream that carried no answer ends "trailers-only":
    // the count then comes with the headers; an error's metadata holds
    // both. A stream this Session ended (Retry, Lost) or that broke
    // carries none.
    let count: string | null | undefined;
    if (rerr === undefined && closedSend) count = trailer?.get(TRAILER_APPLIED) ?? header?.get(TRAILER_APPLIED);
    else if (rerr instanceof ConnectError) count = rerr.metadata.get(TRAILER_APPLIED);
    const n = Number.parseInt(count ?? "", 10);
    if (n >= 1) {
      const to = Math.min(from + n - 1, from + sent);
      if (to > this.#confirmed) {
        this.#answer(to);
        p = true;
      }
    }
    if (rerr === undefined && closedSend) {
      this.#cycle = false;
      if (this.#confirmed >= from + sent) {
        this.#flushing = this.#flushing && this.#confirmed < this.#total();
        this.#notify();
        return p;
      }
      this.#notify();
      throw new StreamEnd(p, new Retry("stream ended with requests unanswered"));
    }
    this.#notify();
    throw new StreamEnd(p, rerr ?? new Retry("stream ended with requests unanswered"));
  }

  /**
   * Handles a FrameError; throws Retry or Lost to end the stream.
   * sentBefore is how many requests earlier streams had sent.
   */
  #frameError(fe: FrameError, sentBefore: number): void {
    if (fe.code !== Code.DataLoss && fe.code !== Code.Unavailable) {
      // Not for a request not applied: acpnormd before 3dc7a74 answered a
      // batch it could not apply with one FrameError, of the sequence of
      // its last frame (each frame gets its own now), so the requests
      // before it need not have been answered. As the Go client does.
      this.#confirm(fe.sequence);
    }
    switch (fe.code) {
      case Code.AlreadyExists:
        if (this.#upTo(fe.sequence) <= sentBefore) {
          // A request sent again that was applied before; what it made
          // came then, or comes whole with the next revisions.
          return;
        }
        // Sent for the first time, yet applied before: another Session
        // numbered this session's requests alike (a process whose clock
        // was behind an earlier one's, see #base). The request was not
        // applied: say so.
        fe = clone(FrameErrorSchema, fe);
        fe.message +=
          "; this Session had not sent it before, so another Session (or process) of the same session id numbered its requests alike " +
          "(a clock behind the earlier one's?) and this request was not applied";
        break;
      case Code.Unavailable:
        // Not applied: send it again, after a wait, maybe elsewhere.
        this.#stats.notApplied++;
        throw new Retry(fe.message);
      case Code.DataLoss: {
        this.#stats.losses++;
        if (this.#dropped > 0) {
          // The session's first requests are no longer kept: it cannot be
          // rebuilt, and a rebuild from what is kept would miss what named
          // the agent (initialize, session/new).
          throw new Lost(fe, false, this.#dropped, `${this.#c.maxRequests} requests, ${this.#c.maxBytes} bytes`);
        }
        this.#rebuilds++;
        this.#lossAt = Math.max(this.#lossAt, this.#upTo(fe.sequence));
        this.#answer(0); // rebuild: everything again from the first
        throw new Lost(fe, this.#rebuilds > this.#c.maxRebuilds);
      }
    }
    this.#report(fe);
  }

  /** Records that the requests before sequence seq were answered (a stream answers in order). */
  #confirm(seq: bigint): void {
    if (seq <= this.#base) return;
    const n = this.#upTo(seq - 1n);
    if (n > this.#confirmed) {
      this.#answer(n);
      if (n > this.#lossAt) this.#rebuilds = 0; // the rebuild got past where the loss was found
      this.#notify();
    }
  }

  /** How many of the session's requests have a sequence up to seq. */
  #upTo(seq: bigint): number {
    if (seq <= this.#base) return 0;
    const n = seq - this.#base;
    const total = this.#total();
    return n > BigInt(total) ? total : Number(n);
  }

  /** The sequence of the session's first request; the n-th has firstSequence + n - 1. */
  get firstSequence(): bigint {
    return this.#base + 1n;
  }

  /** Folds one revision in, once. */
  #apply(x: ShellExec): void {
    const held = this.#folder.revision(keyOf(x));
    if (held !== undefined && x.revision <= held) {
      this.#stats.duplicates++;
      return;
    }
    try {
      this.#folder.apply(x);
    } catch (e) {
      if (!(e instanceof FoldError) || !e.applied) {
        // Not folded: a gap with appended text, or a malformed revision.
        this.#report(
          create(FrameErrorSchema, {
            sessionId: x.sessionId,
            sequence: x.sequence,
            toolCallId: x.toolCallId,
            code: Code.DataLoss,
            message: e instanceof Error ? e.message : String(e),
          }),
        );
        return;
      }
    }
    this.#opts.onRevision?.(x);
  }

  /** Hands a FrameError on once. */
  #report(fe: FrameError): void {
    const k = JSON.stringify([String(fe.sequence), fe.code, fe.toolCallId, fe.message]);
    if (this.#seenErrs.has(k)) return;
    this.#seenErrs.add(k);
    this.#errs.push(fe);
    this.#opts.onFrameError?.(fe);
  }
}

/** Why a stream ended, and whether it got any request answered. */
class StreamEnd extends Error {
  constructor(
    readonly progress: boolean,
    override readonly cause: unknown,
  ) {
    super(cause instanceof Error ? cause.message : String(cause));
  }
}

/** A lone UTF-16 surrogate (in a string read as code points), which has no UTF-8 form. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Says which of the fields every request of a session carries cannot be
 * encoded as UTF-8, as a protobuf string must be, as the Go client does.
 */
function invalidField(id: string, opts: SessionOptions): InvalidSessionError | undefined {
  const fields = [
    ["session id", id],
    ["dialect", opts.dialect ?? "auto"],
    ["working directory", opts.cwd ?? ""],
  ] as const;
  for (const [what, v] of fields) {
    if (LONE_SURROGATE.test(v)) {
      return new InvalidSessionError(
        `acpnorm client: invalid session: the ${what} ${JSON.stringify(v)} is not well-formed Unicode ` +
          `(a lone UTF-16 surrogate has no UTF-8 form), so no request of it can be sent`,
      );
    }
  }
  return undefined;
}

/** What a request counts in the byte bound. */
function msgSize(r: NormalizeRequest): number {
  return r.kind.case === "frame" ? r.kind.value.message.length : 0;
}

/** Whether a stream's error is one reconnecting cannot cure. */
function fatal(err: ConnectError): boolean {
  if (err.code === Code.ResourceExhausted && err.rawMessage.includes(TOO_LARGE_WORDS)) {
    return true; // the same request would be too large again, unless #leaveOutTooLarge leaves it out
  }
  switch (err.code) {
    case Code.Unavailable:
    case Code.Aborted:
    case Code.Canceled:
    case Code.DeadlineExceeded:
    case Code.Internal:
    case Code.Unknown:
    case Code.ResourceExhausted:
      // ResourceExhausted: a stream cut off as stalled, or a process at
      // its stream limit; Internal and Unknown: a connection cut mid-message.
      return false;
  }
  return true;
}
