// TypeScript client for acpnorm's NormalizerService.
//
// The messages and the service descriptor are generated from
// proto/acpnorm/v1/normalizer.proto by `bash gen/generate.sh` into this
// package (src/gen, their only copy); this module re-exports them and
// adds what an orchestrator needs around them: a gRPC (HTTP/2) client over
// plaintext, TLS or mutual TLS with an optional bearer token, a reader for
// ACP recording lines, `normalizeLines`, which streams ACP traffic to the
// server and yields every ShellExec revision and FrameError it answers with,
// and `Folder`, which folds those revisions into each call's state.

import { readFileSync } from "node:fs";
import type { SecureClientSessionOptions } from "node:http2";
import { create, isMessage } from "@bufbuild/protobuf";
import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import {
  createGrpcTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import {
  Direction,
  FrameErrorSchema,
  NormalizeRequestSchema,
  NormalizerService,
  ShellExecSchema,
  type FrameError,
  type NormalizeRequest,
  type ShellExec,
} from "./gen/acpnorm/v1/normalizer_pb.js";

export * from "./gen/acpnorm/v1/normalizer_pb.js";
export * from "./fold.js";
export * from "./session.js";
/** What a failed call throws, and its status codes. */
export { Code, ConnectError } from "@connectrpc/connect";

/** A typed client of acpnorm.v1.NormalizerService. */
export type NormalizerClient = Client<typeof NormalizerService>;

/** A client together with the HTTP/2 connection it owns. */
export interface NormalizerConnection {
  client: NormalizerClient;
  /** Closes the HTTP/2 connection; calls still running fail. */
  close(): void;
}

/** How to reach a server that requires TLS or a token (see connect). */
export interface ConnectOptions {
  /** Use TLS (implied by every option below but token). */
  tls?: boolean;
  /** PEM CA certificates to trust instead of Node's roots. */
  ca?: string | Uint8Array;
  /** A file holding them. */
  caFile?: string;
  /** PEM client certificate and key, for mutual TLS. */
  cert?: string | Uint8Array;
  key?: string | Uint8Array;
  /** Files holding them. */
  certFile?: string;
  keyFile?: string;
  /** The name to check in the server's certificate (default: the host). */
  serverName?: string;
  /**
   * A bearer token, sent on every call as `authorization: Bearer <token>`.
   * Without TLS anyone on the path can read it: use that on loopback only.
   */
  token?: string;
  /** A file holding the token (read once, surrounding whitespace dropped). */
  tokenFile?: string;
}

/**
 * Connects to acpnormd over gRPC (HTTP/2): plaintext by default, TLS or
 * mutual TLS when the options ask for it, with an optional bearer token.
 *
 * @param addr `host:port` (for example `127.0.0.1:50051`) or a full
 *   `http://host:port` or `https://host:port` base URL.
 */
export function connect(addr: string, opts: ConnectOptions = {}): NormalizerConnection {
  const { transport, sessionManager } = grpcTransport(addr, opts);
  return {
    client: createClient(NormalizerService, transport),
    close: () => sessionManager.abort(),
  };
}

/**
 * The gRPC transport of connect, and the HTTP/2 connection it uses; ping
 * sets keepalive pings on that connection (see Http2SessionManager).
 * @internal
 */
export function grpcTransport(
  addr: string,
  opts: ConnectOptions,
  ping?: { pingIntervalMs: number; pingTimeoutMs: number },
) {
  const read = (v: string | Uint8Array | undefined, file: string | undefined, what: string) => {
    if (v !== undefined && file !== undefined) throw new Error(`connect: give ${what} or ${what}File, not both`);
    return file !== undefined ? readFileSync(file) : v;
  };
  const ca = read(opts.ca, opts.caFile, "ca");
  const cert = read(opts.cert, opts.certFile, "cert");
  const key = read(opts.key, opts.keyFile, "key");
  if ((cert === undefined) !== (key === undefined)) {
    throw new Error("connect: a client certificate and its key go together (mutual TLS needs both)");
  }
  let token = opts.token;
  if (opts.tokenFile !== undefined) {
    if (token !== undefined) throw new Error("connect: give token or tokenFile, not both");
    token = readFileSync(opts.tokenFile, "utf8").trim();
  }
  if (token !== undefined && (token === "" || /[\r\n]/.test(token))) {
    throw new Error("connect: the token is empty or spans lines");
  }
  const tls =
    opts.tls === true || addr.startsWith("https://") || ca !== undefined || cert !== undefined || opts.serverName !== undefined;
  if (tls && addr.startsWith("http://")) throw new Error(`connect: ${addr} is http://, but TLS options were given`);
  const baseUrl = /^https?:\/\//.test(addr) ? addr : `${tls ? "https" : "http"}://${addr}`;
  const secure: SecureClientSessionOptions = {};
  if (ca !== undefined) secure.ca = toPem(ca);
  if (cert !== undefined) secure.cert = toPem(cert);
  if (key !== undefined) secure.key = toPem(key);
  if (opts.serverName !== undefined) secure.servername = opts.serverName;
  const sessionManager = new Http2SessionManager(baseUrl, ping, tls ? secure : undefined);
  const interceptors: Interceptor[] = [];
  if (token !== undefined) {
    const value = `Bearer ${token}`;
    interceptors.push((next) => (req) => {
      req.header.set("authorization", value);
      return next(req);
    });
  }
  const transport = createGrpcTransport({ baseUrl, sessionManager, interceptors });
  return { transport, sessionManager };
}

function toPem(v: string | Uint8Array): string | Buffer {
  return typeof v === "string" ? v : Buffer.from(v);
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
  return isMessage(r, ShellExecSchema);
}

/** True when a result is a FrameError. */
export function isFrameError(r: NormalizeResult): r is FrameError {
  return isMessage(r, FrameErrorSchema);
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
