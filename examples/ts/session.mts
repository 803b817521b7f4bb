// A session that survives failures: streams an ACP recording to a fleet of
// acpnormd through the client's Session (reconnects, resends, rebuilds
// after the store lost the session) and prints each call's final state.
//
//   (cd clients/ts && npm ci)     # once: the client's dependencies and tsx
//   clients/ts/node_modules/.bin/tsx examples/ts/session.mts --addr 10.0.0.1:50051,10.0.0.2:50051 FILE.ndjson
//
// Each line of FILE is a recorder envelope {"dir", "t_ms", "msg"} or a bare
// JSON-RPC message. A project of its own imports the same names from
// "@acpnorm/client".

import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { parseArgs } from "node:util";
import {
  ConnectError,
  Code,
  parseAcpLine,
  SessionClient,
  ShellOutcome,
  ShellState,
} from "../../clients/ts/src/index.js";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    addr: { type: "string", default: "127.0.0.1:50051" },
    session: { type: "string" },
    "token-file": { type: "string" },
  },
});
if (positionals.length !== 1) {
  console.error("usage: session.mts [--addr HOST:PORT,HOST:PORT,...] [--session ID] [--token-file FILE] FILE.ndjson");
  process.exit(2);
}
const file = positionals[0]!;

const client = new SessionClient(values.addr!.split(","), {
  backoff: { minMs: 50, maxMs: 2000 },
  tokenFile: values["token-file"],
});
try {
  const s = client.session(values.session ?? basename(file), {
    onRevision: (x) => console.log(`${x.toolCallId} rev=${x.revision} ${ShellState[x.state]}`), // live, in order, never twice
  });
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const acp = parseAcpLine(line);
    if (acp !== undefined) s.send(acp.direction, acp.message); // queued; returns at once
  }
  await s.close(AbortSignal.timeout(60_000)); // SessionClosed, then every answer received
  for (const x of s.calls()) {
    const exit = x.exitCode !== undefined ? ` exit=${x.exitCode}` : "";
    console.log(`final ${x.toolCallId} rev=${x.revision} ${ShellState[x.state]} ${ShellOutcome[x.outcome]}${exit} $ ${x.command}`);
  }
  console.log(`stats ${JSON.stringify(s.stats())}`);
} catch (err) {
  const msg = err instanceof ConnectError ? `${Code[err.code]}: ${err.rawMessage}` : err instanceof Error ? err.message : String(err);
  console.error(`acpnorm: ${msg}`);
  process.exitCode = 1;
} finally {
  client.close();
}
