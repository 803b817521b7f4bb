// A minimal orchestrator: streams an ACP recording to a running acpnormd and
// prints every ShellExec revision and FrameError it answers with.
//
//   (cd clients/ts && npm ci)     # once: the client's dependencies and tsx
//   clients/ts/node_modules/.bin/tsx examples/ts/main.mts [--addr 127.0.0.1:50051] FILE.ndjson
//
// Each line of FILE is a recorder envelope {"dir", "t_ms", "msg"} or a bare
// JSON-RPC message. --ca-file (TLS), --cert-file/--key-file (mutual TLS) and
// --token-file (a bearer token) reach a server that requires them. A project
// of its own imports the same names from "@acpnorm/client".

import { open } from "node:fs/promises";
import { basename } from "node:path";
import { parseArgs } from "node:util";
import {
  Code,
  ConnectError,
  connect,
  isFrameError,
  normalizeLines,
  ShellOutcome,
  ShellState,
  splitLines,
  type NormalizeResult,
} from "../../clients/ts/src/index.js";

function describe(r: NormalizeResult): string {
  if (isFrameError(r)) return `frame error seq=${r.sequence} code=${r.code}: ${r.message}`;
  let line = `${r.toolCallId} rev=${r.revision} ${ShellState[r.state]}`;
  if (r.state === ShellState.ENDED) {
    line += ` ${ShellOutcome[r.outcome]}`;
    if (r.exitCode !== undefined) line += ` exit=${r.exitCode}`;
  }
  return `${line} $ ${r.command}`;
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    addr: { type: "string", default: "127.0.0.1:50051" },
    session: { type: "string" },
    dialect: { type: "string", default: "auto" },
    "ca-file": { type: "string" },
    "cert-file": { type: "string" },
    "key-file": { type: "string" },
    "token-file": { type: "string" },
  },
});
if (positionals.length !== 1) {
  console.error(
    "usage: main.mts [--addr HOST:PORT] [--session ID] [--dialect NAME] [--ca-file PEM] [--cert-file PEM --key-file PEM] [--token-file FILE] FILE.ndjson",
  );
  process.exit(2);
}
const file = positionals[0];
const addr = values.addr!;

try {
  const input = await open(file); // fails here, in one line, when unreadable
  const { client, close } = connect(addr, {
    caFile: values["ca-file"],
    certFile: values["cert-file"],
    keyFile: values["key-file"],
    tokenFile: values["token-file"],
  });
  try {
    const lines = splitLines(input.createReadStream());
    for await (const r of normalizeLines(client, lines, {
      sessionId: values.session ?? basename(file),
      dialect: values.dialect,
    })) {
      console.log(describe(r));
    }
  } finally {
    close();
    await input.close().catch(() => {}); // already closed when read to the end
  }
} catch (err) {
  // One line, not a stack trace: an unreachable server, a refused token, a
  // missing file.
  const msg =
    err instanceof ConnectError ? `${addr}: ${Code[err.code]}: ${err.rawMessage}` : err instanceof Error ? err.message : String(err);
  console.error(`acpnorm: ${msg}`);
  process.exitCode = 1;
}
