// Tests the TypeScript client against the real acpnormd binary: a real ACP
// recording streamed through Normalize, a malformed frame in the middle of a
// stream, and a stream aborted half way.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  connect,
  isFrameError,
  isShellExec,
  normalizeLines,
  ShellOutcome,
  ShellState,
  type FrameError,
  type NormalizerConnection,
  type NormalizeResult,
  type ShellExec,
} from "../src/index.js";
import { recordingsDir, startServer, type RunningServer } from "./server.js";

const CODEX = "codex-acp-0.16.0_shell-command_terminal-meta.ndjson";

function recording(name: string): string[] {
  return readFileSync(join(recordingsDir, name), "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "");
}

/** The tool call ids a recording mentions, from its session/update frames. */
function toolCallIds(lines: string[]): Set<string> {
  const ids = new Set<string>();
  for (const line of lines) {
    const o = JSON.parse(line);
    const m = o.msg ?? o;
    const id = m?.params?.update?.toolCallId ?? m?.params?.toolCall?.toolCallId;
    if (typeof id === "string") ids.add(id);
  }
  return ids;
}

async function collect(results: AsyncIterable<NormalizeResult>) {
  const execs: ShellExec[] = [];
  const errors: FrameError[] = [];
  for await (const r of results) {
    if (isShellExec(r)) execs.push(r);
    else if (isFrameError(r)) errors.push(r);
  }
  return { execs, errors };
}

/** The revisions of each tool call, in arrival order. */
function byCall(execs: ShellExec[]): Map<string, ShellExec[]> {
  const calls = new Map<string, ShellExec[]>();
  for (const e of execs) {
    const list = calls.get(e.toolCallId) ?? [];
    list.push(e);
    calls.set(e.toolCallId, list);
  }
  return calls;
}

function assertWellFormed(execs: ShellExec[], sessionId: string) {
  for (const [id, revs] of byCall(execs)) {
    revs.forEach((e, i) => {
      assert.equal(e.sessionId, sessionId);
      assert.ok(e.revision >= 1, `${id}: revision ${e.revision}`);
      assert.equal(e.revision, i + 1, `${id}: revisions must count 1, 2, 3, ... with no gap`);
    });
  }
}

/** The last revision of the call whose command runs `exit 3`. */
function exit3(execs: ShellExec[]): ShellExec {
  const calls = byCall(execs);
  const match = [...calls.values()].filter((revs) =>
    revs.some((e) => e.command.includes("exit 3")),
  );
  assert.equal(match.length, 1, "exactly one call runs `exit 3`");
  return match[0].at(-1)!;
}

let server: RunningServer;
let conn: NormalizerConnection;
let run = 0;
const session = (name: string) => `ts-${name}-${process.pid}-${++run}`;

describe("acpnorm TypeScript client against acpnormd", () => {
  before(async () => {
    server = await startServer();
    conn = connect(server.addr);
  });
  after(async () => {
    conn?.close();
    await server?.stop();
  });

  it("lists dialects, the generic one included", async () => {
    const res = await conn.client.listDialects({});
    assert.ok(res.dialects.length >= 1);
    assert.ok(res.dialects.every((d) => d.name !== ""));
  });

  it("normalizes a real Codex recording", async () => {
    const lines = recording(CODEX);
    const sessionId = session("codex");
    const { execs, errors } = await collect(
      normalizeLines(conn.client, lines, { sessionId }),
    );
    assert.deepEqual(errors, [], "a real recording has no bad frame");
    assertWellFormed(execs, sessionId);

    const ids = new Set(execs.map((e) => e.toolCallId));
    const inRecording = toolCallIds(lines);
    for (const id of ids) assert.ok(inRecording.has(id), `unknown tool call ${id}`);
    // Nine steps; the two Codex reports as a search may or may not count as
    // shell calls, the seven `execute` ones must.
    assert.ok(ids.size >= 7 && ids.size <= 9, `distinct shell calls: ${ids.size}`);

    const last = exit3(execs);
    assert.equal(last.state, ShellState.ENDED);
    assert.equal(last.exitCode, 3);
    assert.equal(last.outcome, ShellOutcome.FAILED);
    // The build its initialize result named, on every revision.
    assert.deepEqual([...new Set(execs.map((e) => e.agentVersion))], ["0.16.0"]);

    // The stream ended with SessionClosed, so every call ended.
    for (const [id, revs] of byCall(execs)) {
      assert.equal(revs.at(-1)!.state, ShellState.ENDED, `${id} did not end`);
    }
  });

  it("answers a frame that is not JSON with a FrameError and goes on", async () => {
    const lines = recording(CODEX);
    // After initialize, session/new and their answers: frame sequence 5.
    const badAt = 4;
    const withBad = [...lines.slice(0, badAt), "not json", ...lines.slice(badAt)];
    const sessionId = session("bad");
    const { execs, errors } = await collect(
      normalizeLines(conn.client, withBad, { sessionId }),
    );
    assert.equal(errors.length, 1, `frame errors: ${JSON.stringify(errors.map((e) => e.message))}`);
    const [err] = errors;
    assert.equal(err.code, Code.InvalidArgument); // 3
    assert.equal(err.sequence, BigInt(badAt + 1));
    assert.equal(err.sessionId, sessionId);
    assert.notEqual(err.message, "");

    // Frames after the bad one were still read.
    assert.ok(execs.some((e) => e.sequence > err.sequence), "no ShellExec after the bad frame");
    assertWellFormed(execs, sessionId);
    const last = exit3(execs);
    assert.equal(last.state, ShellState.ENDED);
    assert.equal(last.exitCode, 3);
  });

  it("cancels a stream cleanly and keeps serving", async () => {
    const lines = recording(CODEX);
    const ac = new AbortController();
    let closed = false;
    // Sends the first prompt turns, then waits for more input that never
    // comes, like an orchestrator whose agent is still thinking.
    async function* slowLines() {
      try {
        yield* lines.slice(0, 22);
        await new Promise((ok) => ac.signal.addEventListener("abort", ok));
      } finally {
        closed = true;
      }
    }
    const seen: ShellExec[] = [];
    await assert.rejects(
      async () => {
        for await (const r of normalizeLines(conn.client, slowLines(), {
          sessionId: session("cancel"),
          signal: ac.signal,
        })) {
          if (isShellExec(r)) {
            seen.push(r);
            ac.abort();
          }
        }
      },
      (err: unknown) => {
        assert.equal(ConnectError.from(err).code, Code.Canceled);
        return true;
      },
    );
    assert.ok(seen.length >= 1);
    // The request generator was released.
    for (let i = 0; i < 50 && !closed; i++) await new Promise((ok) => setTimeout(ok, 20));
    assert.ok(closed, "the request stream was not closed");

    // The server is alive and a new stream on the same connection works.
    assert.ok(server.alive(), `acpnormd died:\n${server.log()}`);
    await conn.client.listDialects({});
    const sessionId = session("after-cancel");
    const { execs, errors } = await collect(
      normalizeLines(conn.client, lines.slice(0, 22), { sessionId }),
    );
    assert.deepEqual(errors, []);
    assertWellFormed(execs, sessionId);
    assert.equal(exit3(execs).exitCode, 3);
  });
});
