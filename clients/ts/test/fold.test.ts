// Tests Folder: against the shared revision sequences of
// test/testdata/fold/vectors.json (which the Go and Python folds meet too),
// and against the real acpnormd, whose folded results must equal the
// goldens of test/testdata/golden.

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { clone, create, equals, fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import {
  connect,
  FoldError,
  Folder,
  isShellExec,
  keyOf,
  normalizeLines,
  ShellExecSchema,
  ShellTextSchema,
  TextMode,
  type FrameError,
  type NormalizeResult,
} from "../src/index.js";
import { recordingsDir, repoRoot, startServer, type RunningServer } from "./server.js";

interface Vectors {
  cases: {
    name: string;
    limit?: number;
    steps: { revision: JsonValue; error?: string; applied?: boolean }[];
    want: JsonValue[];
  }[];
}

const vectors: Vectors = JSON.parse(
  readFileSync(join(repoRoot, "test", "testdata", "fold", "vectors.json"), "utf8"),
);

describe("Folder on the shared vectors", () => {
  assert.ok(vectors.cases.length > 0);
  for (const c of vectors.cases) {
    it(c.name, () => {
      const folder = new Folder({ limit: c.limit });
      c.steps.forEach((step, i) => {
        const x = fromJson(ShellExecSchema, step.revision);
        if (step.error === undefined) {
          folder.apply(x);
          return;
        }
        assert.throws(
          () => folder.apply(x),
          (err: unknown) => {
            assert.ok(err instanceof FoldError, `step ${i}: ${err}`);
            assert.equal(err.kind, step.error, `step ${i}: ${err.message}`);
            assert.equal(err.applied, step.applied ?? false, `step ${i}: ${err.message}`);
            assert.deepEqual(err.key, keyOf(x));
            assert.equal(err.got, x.revision);
            assert.ok(err.message.includes(JSON.stringify(x.toolCallId)), err.message);
            return true;
          },
          `step ${i}: want a ${step.error} error`,
        );
      });
      const keys = folder.calls();
      assert.equal(keys.length, c.want.length);
      keys.forEach((k, i) => {
        const got = folder.state(k)!;
        const want = fromJson(ShellExecSchema, c.want[i]);
        assert.ok(
          equals(ShellExecSchema, got, want),
          `call ${i}:\n got ${JSON.stringify(toJson(ShellExecSchema, got))}\nwant ${JSON.stringify(c.want[i])}`,
        );
      });
    });
  }

  it("never changes a state it handed out", () => {
    const folder = new Folder();
    const text = (t: string) => create(ShellTextSchema, { text: t, mode: TextMode.APPEND });
    const r1 = create(ShellExecSchema, { sessionId: "s", toolCallId: "c", revision: 1, output: text("a") });
    folder.apply(r1);
    r1.output!.text = "changed by the caller";
    const k = { sessionId: "s", toolCallId: "c" };
    const first = folder.state(k)!;
    assert.equal(folder.state(k), first);
    folder.apply(create(ShellExecSchema, { sessionId: "s", toolCallId: "c", revision: 2, output: text("b") }));
    assert.equal(first.output?.text, "a");
    assert.equal(folder.state(k)?.output?.text, "ab");
    assert.equal(folder.state({ sessionId: "s", toolCallId: "other" }), undefined);
    assert.equal(folder.revision(k), 2);
    assert.equal(folder.revision({ sessionId: "s", toolCallId: "other" }), undefined);
    folder.delete(k);
    assert.deepEqual(folder.calls(), []);
  });
});

/** What test/golden_test.go writes for a text over 2 KiB. */
function elide(s: string): string {
  const keep = 1024;
  const b = Buffer.from(s, "utf8");
  if (b.length <= 2 * keep) return s;
  const valid = (x: Buffer) => Buffer.from(x.toString("utf8"), "utf8").equals(x);
  let head = b.subarray(0, keep);
  let tail = b.subarray(b.length - keep);
  while (!valid(head)) head = head.subarray(0, head.length - 1);
  while (!valid(tail)) tail = tail.subarray(1);
  const sum = createHash("sha256").update(b).digest("hex");
  return `${head.toString("utf8")}…[${b.length - head.length - tail.length} bytes elided; sha256 of the whole text ${sum}]…${tail.toString("utf8")}`;
}

/** The final ShellExec of each call in a golden file. */
function goldenCalls(name: string): JsonValue[] {
  const text = readFileSync(join(repoRoot, "test", "testdata", "golden", `${name}.golden`), "utf8");
  return [...text.matchAll(/^\{\n[\s\S]*?^\}$/gm)].map((m) => JSON.parse(m[0]));
}

describe("Folder against acpnormd", () => {
  let server: RunningServer;
  before(async () => {
    server = await startServer();
  });
  after(async () => {
    await server?.stop();
  });

  it("folds every recording into its golden", async () => {
    const names = readdirSync(recordingsDir)
      .filter((n) => n.endsWith(".ndjson"))
      .map((n) => n.slice(0, -".ndjson".length))
      .sort();
    assert.ok(names.length > 0);
    const { client, close } = connect(server.addr);
    try {
      for (const name of names) {
        const lines = readFileSync(join(recordingsDir, `${name}.ndjson`), "utf8").split("\n");
        const folder = new Folder();
        const frameErrors: FrameError[] = [];
        // As the goldens were made: no TurnEnded from the client.
        for await (const r of normalizeLines(client, lines, { sessionId: name, turnEnded: false }) as AsyncIterable<NormalizeResult>) {
          if (isShellExec(r)) folder.apply(r);
          else frameErrors.push(r);
        }
        assert.deepEqual(frameErrors, [], name);
        const got = folder.calls().map((k) => {
          const s = clone(ShellExecSchema, folder.state(k)!);
          s.sequence = 0n;
          for (const f of ["output", "stdout", "stderr"] as const) {
            const t = s[f];
            if (t !== undefined) t.text = elide(t.text);
          }
          return toJson(ShellExecSchema, s);
        });
        assert.deepEqual(got, goldenCalls(name), name);
      }
    } finally {
      close();
    }
  });
});
