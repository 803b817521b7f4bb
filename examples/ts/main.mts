// A minimal orchestrator: streams an ACP recording to a running acpnormd and
// prints every ShellExec revision and FrameError it answers with.
//
//   (cd clients/ts && npm ci)
//   clients/ts/node_modules/.bin/tsx examples/ts/main.mts [--addr 127.0.0.1:50051] FILE.ndjson
//
// Each line of FILE is a recorder envelope {"dir", "t_ms", "msg"} or a bare
// JSON-RPC message.

import { createReadStream } from "node:fs";
import { basename } from "node:path";
import { parseArgs } from "node:util";
import {
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
  },
});
if (positionals.length !== 1) {
  console.error("usage: main.mts [--addr HOST:PORT] [--session ID] [--dialect NAME] FILE.ndjson");
  process.exit(2);
}
const file = positionals[0];

const { client, close } = connect(values.addr!);
try {
  const lines = splitLines(createReadStream(file));
  for await (const r of normalizeLines(client, lines, {
    sessionId: values.session ?? basename(file),
    dialect: values.dialect,
  })) {
    console.log(describe(r));
  }
} finally {
  close();
}
