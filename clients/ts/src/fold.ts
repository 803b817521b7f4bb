// Folding ShellExec revisions into the current state of each call.
//
// A revision carries every scalar field of its call, but the three text
// fields (output, stdout, stderr) only when they changed: TEXT_MODE_APPEND
// text is added to what the client holds, TEXT_MODE_REPLACE text replaces
// it, and an absent field leaves it as it was. A final (ENDED) revision folds
// the same way. Revisions count 1, 2, 3, ... per (sessionId, toolCallId)
// with no gap; a Folder checks that and throws a FoldError for a gap, a
// restart or a repeat. A restart, a repeat or a malformed revision is not
// applied. A revision after a gap is applied only when it carries no APPEND
// text, so that it cannot add to text that missed a part: that is how a
// client resynchronises after a reconnect, whose first revision carries the
// whole text (REPLACE); the error then has `applied` set. The same rules as
// the Go package github.com/acpnorm/acpnorm/fold and the Python Folder, held
// to the same test vectors.

import { clone, create } from "@bufbuild/protobuf";
import {
  ShellExecSchema,
  ShellTextSchema,
  TextMode,
  type ShellExec,
  type ShellText,
} from "./gen/acpnorm/v1/normalizer_pb.js";

/** Names one shell tool call. */
export interface CallKey {
  sessionId: string;
  toolCallId: string;
}

/** The call a revision belongs to. */
export function keyOf(x: ShellExec): CallKey {
  return { sessionId: x.sessionId, toolCallId: x.toolCallId };
}

/**
 * What was wrong with a refused revision: "gap" (past the next revision
 * expected; a call first seen past revision 1 too), "restart" (not past the
 * last one applied: numbering went back or repeated) or "invalid" (revision
 * 0, or a text field whose mode is neither APPEND nor REPLACE).
 */
export type FoldErrorKind = "gap" | "restart" | "invalid";

/**
 * A revision out of order or malformed. Unless `applied`, the call's state
 * is unchanged.
 */
export class FoldError extends Error {
  override name = "FoldError";
  constructor(
    readonly kind: FoldErrorKind,
    readonly key: CallKey,
    /** The last revision applied to the call (0 when none was). */
    readonly held: number,
    /** The revision reported. */
    readonly got: number,
    readonly detail = "",
    /**
     * True for a gap revision that carried no APPEND text: its scalars and
     * REPLACE texts were taken (texts it did not carry keep what was held)
     * and numbering goes on from it.
     */
    readonly applied = false,
  ) {
    const where = `call ${JSON.stringify(key.toolCallId)} of session ${JSON.stringify(key.sessionId)}`;
    const gapWhat = applied ? "resynchronised from its whole text" : "not applied: it appends to text that missed a part";
    super(
      kind === "gap"
        ? `fold: ${where}: revision ${got} after ${held}: ${got - held - 1} revision(s) missing; ${gapWhat}`
        : kind === "restart"
          ? `fold: ${where}: revision ${got} after ${held}: numbering went back or repeated`
          : `fold: ${where}: revision ${got}: ${detail}`,
    );
  }
}

const fields = ["output", "stdout", "stderr"] as const;

interface HeldText {
  parts: string[];
  bytes: number; // UTF-8 bytes of parts, counted only under a limit
  cut: boolean; // the text lost its head to the limit
  truncated: boolean;
  totalBytes: bigint;
}

/** Options of a Folder. */
export interface FolderOptions {
  /**
   * When above 0, each folded text keeps its last `limit` bytes (UTF-8),
   * from the first character that starts in them, as acpnormd cuts (its
   * --text-limit, 256 KiB by default); the state then says truncated.
   * APPEND text is never cut by the server, so without a limit a long
   * output's folded text holds all of it until a REPLACE.
   */
  limit?: number;
}

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();

/** The last n UTF-8 bytes of s, from the first character that starts in them. */
function tailUtf8(s: string, n: number): string {
  const b = utf8.encode(s);
  if (b.length <= n) return s;
  let i = b.length - n;
  while (i < b.length && (b[i]! & 0xc0) === 0x80) i++;
  return fromUtf8.decode(b.subarray(i));
}

interface HeldCall {
  key: CallKey;
  last: ShellExec; // the latest revision, text fields cleared
  texts: Partial<Record<(typeof fields)[number], HeldText>>;
  state?: ShellExec; // built on demand
}

const mapKey = (k: CallKey) => JSON.stringify([k.sessionId, k.toolCallId]);

/** The folded state of every call it was given revisions for. */
export class Folder {
  // A Map keeps first-applied order.
  readonly #calls = new Map<string, HeldCall>();
  readonly #limit: number;

  constructor(options: FolderOptions = {}) {
    this.#limit = Math.max(0, Math.floor(options.limit ?? 0));
  }

  /**
   * Folds one revision into its call's state. Throws a FoldError when the
   * revision is out of order or malformed, having changed nothing unless the
   * error's `applied` is set. Keeps no reference to `x`.
   */
  apply(x: ShellExec): void {
    const key = keyOf(x);
    const c = this.#calls.get(mapKey(key));
    const held = c?.last.revision ?? 0;
    const got = x.revision;
    if (got === 0) throw new FoldError("invalid", key, held, got, "revision 0 (revisions count from 1)");
    if (got <= held) throw new FoldError("restart", key, held, got);
    let appends = false;
    for (const f of fields) {
      const t: ShellText | undefined = x[f];
      if (t === undefined) continue;
      if (t.mode !== TextMode.APPEND && t.mode !== TextMode.REPLACE) {
        throw new FoldError("invalid", key, held, got, `${f} has mode ${t.mode}`);
      }
      appends ||= t.mode === TextMode.APPEND;
    }
    let gap: FoldError | undefined;
    if (got > held + 1) {
      gap = new FoldError("gap", key, held, got, "", !appends);
      if (appends) throw gap;
    }
    const call: HeldCall = c ?? { key, last: x, texts: {} };
    if (c === undefined) this.#calls.set(mapKey(key), call);
    const last = clone(ShellExecSchema, x);
    for (const f of fields) {
      last[f] = undefined;
      const t = x[f];
      if (t === undefined) continue;
      const h = (call.texts[f] ??= { parts: [], bytes: 0, cut: false, truncated: false, totalBytes: 0n });
      const n = this.#limit > 0 ? utf8.encode(t.text).length : 0;
      if (t.mode === TextMode.REPLACE) {
        h.parts = [t.text];
        h.bytes = n;
        h.cut = false;
      } else {
        h.parts.push(t.text);
        h.bytes += n;
      }
      if (this.#limit > 0 && h.bytes > 2 * this.#limit) {
        // Kept to its tail now and then, so that many appends cost
        // O(total text); state() cuts the rest.
        const kept = tailUtf8(h.parts.join(""), this.#limit);
        h.parts = [kept];
        h.bytes = utf8.encode(kept).length;
        h.cut = true;
      }
      h.truncated = t.truncated;
      h.totalBytes = t.totalBytes;
    }
    call.last = last;
    call.state = undefined;
    if (gap !== undefined) throw gap;
  }

  /**
   * The folded state of a call, or undefined when none of its revisions was
   * applied: the scalar fields of its latest revision, and each text field
   * any revision carried holding the whole text so far (mode REPLACE;
   * truncated and totalBytes from the latest revision that carried it). The
   * message is shared: read it, do not change it; the Folder never changes
   * one it returned.
   */
  state(key: CallKey): ShellExec | undefined {
    const c = this.#calls.get(mapKey(key));
    if (c === undefined) return undefined;
    if (c.state === undefined) {
      const s = clone(ShellExecSchema, c.last);
      for (const f of fields) {
        const h = c.texts[f];
        if (h === undefined) continue;
        if (h.parts.length > 1) h.parts = [h.parts.join("")];
        let text = h.parts[0] ?? "";
        let cut = h.cut;
        if (this.#limit > 0 && h.bytes > this.#limit) {
          text = tailUtf8(text, this.#limit);
          cut = true;
        }
        s[f] = create(ShellTextSchema, {
          text,
          mode: TextMode.REPLACE,
          truncated: h.truncated || cut,
          totalBytes: h.totalBytes,
        });
      }
      c.state = s;
    }
    return c.state;
  }

  /**
   * The number of the latest revision applied to a call, or undefined when
   * none was: what state(key)?.revision says, without building the call's
   * texts (a map lookup, cheap to do before each apply).
   */
  revision(key: CallKey): number | undefined {
    return this.#calls.get(mapKey(key))?.last.revision;
  }

  /** The keys of every call held, in the order each was first applied. */
  calls(): CallKey[] {
    return [...this.#calls.values()].map((c) => ({ ...c.key }));
  }

  /**
   * Forgets a call (for example once its ENDED revision was handled); a
   * later revision of it is then a gap unless it is revision 1.
   */
  delete(key: CallKey): void {
    this.#calls.delete(mapKey(key));
  }
}
