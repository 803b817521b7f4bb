// A project outside the repository that depends on @acpnorm/client: test/clients.sh
// copies this folder to a temporary one, installs the tarball `npm pack`
// made there, type-checks and compiles this file against the package's
// .d.ts, and runs it against the real acpnormd. It streams a recording,
// folds the revisions and prints the final state of each call:
//
//   node consumer.mjs --addr HOST:PORT --session ID [--ca-file PEM]
//     [--cert-file PEM --key-file PEM] [--token-file FILE] FILE.ndjson

import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import {
  Code,
  ConnectError,
  connect,
  Folder,
  isFrameError,
  isShellExec,
  normalizeLines,
  ShellOutcome,
  ShellState,
  type ConnectOptions,
  type ShellExec,
} from "@acpnorm/client";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    addr: { type: "string", default: "127.0.0.1:50051" },
    session: { type: "string", default: "consumer" },
    "ca-file": { type: "string" },
    "cert-file": { type: "string" },
    "key-file": { type: "string" },
    "token-file": { type: "string" },
  },
});
const opts: ConnectOptions = {
  caFile: values["ca-file"],
  certFile: values["cert-file"],
  keyFile: values["key-file"],
  tokenFile: values["token-file"],
};

const { client, close } = connect(values.addr!, opts);
const folder = new Folder();
let revisions = 0;
try {
  const dialects = await client.listDialects({});
  console.log(`dialects: ${dialects.dialects.map((d) => d.name).join(" ")}`);
  const lines = readFileSync(positionals[0], "utf8").split("\n");
  for await (const r of normalizeLines(client, lines, { sessionId: values.session! })) {
    if (isShellExec(r)) {
      folder.apply(r);
      revisions++;
    } else if (isFrameError(r)) {
      console.log(`frame error seq=${r.sequence}: ${r.message}`);
    }
  }
} catch (err) {
  // One line for a refused call, as the examples do.
  console.error(err instanceof ConnectError ? `acpnorm: ${values.addr}: ${Code[err.code]}: ${err.rawMessage}` : `acpnorm: ${err}`);
  process.exit(1);
} finally {
  close();
}
for (const k of folder.calls()) {
  const s: ShellExec = folder.state(k)!;
  const exit = s.exitCode === undefined ? "" : ` exit=${s.exitCode}`;
  const out = s.output?.text.length ?? 0;
  console.log(`${s.toolCallId} rev=${s.revision} ${ShellState[s.state]} ${ShellOutcome[s.outcome]}${exit} output=${out}B $ ${s.command}`);
}
console.log(`${revisions} revisions folded into ${folder.calls().length} calls`);
