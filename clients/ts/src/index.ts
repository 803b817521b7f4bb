// TypeScript client for acpnorm's NormalizerService.
//
// The messages and the service descriptor are generated from
// proto/acpnorm/v1/normalizer.proto into gen/ts by `bash gen/generate.sh`;
// this module re-exports them and adds what an orchestrator needs around
// them: a gRPC (HTTP/2) client, a reader for ACP recording lines, and
// `normalizeLines`, which streams ACP traffic to the server and yields every
// ShellExec revision and FrameError it answers with.

import { create } from "@bufbuild/protobuf";
import { createClient, type Client } from "@connectrpc/connect";
import {
  createGrpcTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import {
  Direction,
  NormalizeRequestSchema,
  NormalizerService,
  type FrameError,
  type NormalizeRequest,
  type ShellExec,
} from "../../../gen/ts/acpnorm/v1/normalizer_pb.js";

export * from "../../../gen/ts/acpnorm/v1/normalizer_pb.js";

/** A typed client of acpnorm.v1.NormalizerService. */
export type NormalizerClient = Client<typeof NormalizerService>;

/** A client together with the HTTP/2 connection it owns. */
export interface NormalizerConnection {
  client: NormalizerClient;
  /** Closes the HTTP/2 connection; calls still running fail. */
  close(): void;
}

/**
 * Connects to acpnormd over gRPC (HTTP/2, plaintext).
 *
 * @param addr `host:port` (for example `127.0.0.1:50051`) or a full
 *   `http://host:port` base URL.
 */
export function connect(addr: string): NormalizerConnection {
  const baseUrl = /^https?:\/\//.test(addr) ? addr : `http://${addr}`;
  const sessionManager = new Http2SessionManager(baseUrl);
  const transport = createGrpcTransport({ baseUrl, sessionManager });
  return {
    client: createClient(NormalizerService, transport),
    close: () => sessionManager.abort(),
  };
}

/** One JSON-RPC message read from an ACP recording or from the wire. */
export interface AcpLine {
  /** Which way the message travelled; UNSPECIFIED for bare messages. */
  direction: Direction;
  /** The bytes of the one JSON-RPC message, as sent to the server. */
  message: Uint8Array;
  /**
   * The message parsed, when it is a JSON object; undefined when the line is
   * not JSON (it is still sent, and the server answers with a FrameError).
   */
  parsed?: Record<string, unknown>;
}

const encoder = new TextEncoder();

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Reads one line of an ACP recording. Two formats are understood:
 * the recorder's envelope `{"dir": "agent->client"|"client->agent",
 * "t_ms": N, "msg": {...}}`, and a bare JSON-RPC message. Anything else
 * (including text that is not JSON) is passed on unchanged, with direction
 * UNSPECIFIED, so that the server can report it. Returns undefined for a
 * blank line.
 */
export function parseAcpLine(line: string): AcpLine | undefined {
  const text = line.trim();
  if (text === "") return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { direction: Direction.UNSPECIFIED, message: encoder.encode(text) };
  }
  if (isObject(value) && "msg" in value && typeof value.dir === "string") {
    const direction =
      value.dir === "agent->client"
        ? Direction.AGENT_TO_CLIENT
        : value.dir === "client->agent"
          ? Direction.CLIENT_TO_AGENT
          : Direction.UNSPECIFIED;
    return {
      direction,
      message: encoder.encode(JSON.stringify(value.msg)),
      parsed: isObject(value.msg) ? value.msg : undefined,
    };
  }
  return {
    direction: Direction.UNSPECIFIED,
    message: encoder.encode(text),
    parsed: isObject(value) ? value : undefined,
  };
}

/** Options of normalizeLines. */
export interface NormalizeLinesOptions {
  /** The orchestrator's session name (AcpFrame.session_id). Required. */
  sessionId: string;
  /** A dialect name from ListDialects, or "auto" (the default). */
  dialect?: string;
  /** The session's absolute working directory, when the client knows it. */
  cwd?: string;
  /**
   * Send a TurnEnded when the agent answers a `session/prompt` request, as an
   * orchestrator does when a prompt turn ends (cancelled when the answer's
   * stopReason is "cancelled"). Default true.
   */
  turnEnded?: boolean;
  /** Send a SessionClosed after the last line. Default true. */
  closeSession?: boolean;
  /** Aborts the stream; the iteration then throws a ConnectError (Canceled). */
  signal?: AbortSignal;
  /** The first sequence number; later requests count up by one. Default 1. */
  firstSequence?: bigint;
}

/** What the server answers on Normalize. */
export type NormalizeResult = ShellExec | FrameError;

/** True when a result is a ShellExec revision. */
export function isShellExec(r: NormalizeResult): r is ShellExec {
  return r.$typeName === "acpnorm.v1.ShellExec";
}

/** True when a result is a FrameError. */
export function isFrameError(r: NormalizeResult): r is FrameError {
  return r.$typeName === "acpnorm.v1.FrameError";
}

/**
 * Turns ACP lines (see parseAcpLine) into the requests of one Normalize
 * stream: one AcpFrame per line, numbered from firstSequence, a TurnEnded
 * after each answered prompt and a SessionClosed at the end (see options).
 */
export async function* requestsFromLines(
  lines: AsyncIterable<string> | Iterable<string>,
  opts: NormalizeLinesOptions,
): AsyncGenerator<NormalizeRequest> {
  const { sessionId } = opts;
  if (!sessionId) throw new Error("normalizeLines: sessionId is required");
  let sequence = opts.firstSequence ?? 1n;
  const next = () => sequence++;
  // ids of session/prompt requests still waiting for their answer
  const prompts = new Set<string>();
  for await (const line of lines) {
    const acp = parseAcpLine(line);
    if (acp === undefined) continue;
    yield create(NormalizeRequestSchema, {
      kind: {
        case: "frame",
        value: {
          sessionId,
          dialect: opts.dialect ?? "auto",
          cwd: opts.cwd ?? "",
          sequence: next(),
          direction: acp.direction,
          message: acp.message,
        },
      },
    });
    const m = acp.parsed;
    if (m === undefined || opts.turnEnded === false) continue;
    const id = m.id === undefined || m.id === null ? undefined : JSON.stringify(m.id);
    if (id === undefined) continue;
    if (m.method === "session/prompt") {
      prompts.add(id);
    } else if (m.method === undefined && prompts.delete(id)) {
      const result = m.result;
      const cancelled = isObject(result) && result.stopReason === "cancelled";
      yield create(NormalizeRequestSchema, {
        kind: { case: "turnEnded", value: { sessionId, sequence: next(), cancelled } },
      });
    }
  }
  if (opts.closeSession !== false) {
    yield create(NormalizeRequestSchema, {
      kind: { case: "sessionClosed", value: { sessionId, sequence: next() } },
    });
  }
}

/**
 * Streams ACP lines (recording lines in either format, or raw JSON-RPC
 * messages) to the server on one Normalize stream and yields every ShellExec
 * revision and FrameError it answers with, in the server's order. A
 * malformed line yields a FrameError and the stream goes on.
 */
export async function* normalizeLines(
  client: NormalizerClient,
  lines: AsyncIterable<string> | Iterable<string>,
  opts: NormalizeLinesOptions,
): AsyncGenerator<NormalizeResult> {
  const responses = client.normalize(requestsFromLines(lines, opts), {
    signal: opts.signal,
  });
  for await (const res of responses) {
    switch (res.kind.case) {
      case "shellExec":
      case "frameError":
        yield res.kind.value;
        break;
      default:
        // A response kind newer than this client: skip it.
        break;
    }
  }
}

/** Splits a stream of text chunks (for example a file stream) into lines. */
export async function* splitLines(
  chunks: AsyncIterable<string | Uint8Array>,
): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let rest = "";
  for await (const chunk of chunks) {
    rest += typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = rest.indexOf("\n")) >= 0) {
      yield rest.slice(0, nl);
      rest = rest.slice(nl + 1);
    }
  }
  rest += decoder.decode();
  if (rest !== "") yield rest;
}
