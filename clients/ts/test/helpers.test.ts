// Tests the helpers of server.ts: what they start is gone once stopped,
// and once the test process ends when a test did not stop it. They left
// an empty /tmp/acpnorm-redis-* directory behind for every redis-server
// they started.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { startRedis } from "./server.js";

/** Whether the process runs (a zombie does not). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

describe("test helpers", () => {
  it("startRedis leaves no directory or process once stopped, restarted before or not", async () => {
    for (const restart of [false, true]) {
      const r = await startRedis();
      assert.ok(existsSync(r.dir));
      if (restart) await r.restart();
      const pid = r.pid()!;
      assert.ok(running(pid));
      await r.stop();
      assert.ok(!existsSync(r.dir), `${r.dir} is left (restarted: ${restart})`);
      assert.ok(!running(pid), `redis-server ${pid} runs`);
    }
  });

  it("stops what a test file started and did not stop, and removes its directories, when it ends", () => {
    const tmp = mkdtempSync(join(tmpdir(), "acpnorm-helpers-"));
    let left: { dir: string; pids: number[] } | undefined;
    try {
      const report = join(tmp, "left.json");
      const tsDir = fileURLToPath(new URL("..", import.meta.url));
      // Not as a part of this run: node --test tells the files it runs so.
      const { NODE_TEST_CONTEXT: _, ...env } = process.env;
      const r = spawnSync(process.execPath, ["--import", "tsx", "--test", "test/fixtures/leave-running.ts"], {
        cwd: tsDir,
        env: { ...env, ACPNORM_LEFT_REPORT: report },
        encoding: "utf8",
        timeout: 30_000, // what it left running would keep it alive
      });
      left = JSON.parse(readFileSync(report, "utf8")) as { dir: string; pids: number[] };
      assert.equal(r.status, 0, `${r.error ?? ""}\n${r.stdout}\n${r.stderr}`);
      assert.equal(left.pids.length, 2);
      assert.ok(!existsSync(left.dir), `${left.dir} is left`);
      for (const pid of left.pids) assert.ok(!running(pid), `process ${pid} runs`);
    } finally {
      // What the helpers failed to stop: the processes of this test's own
      // fixture, by pid.
      for (const pid of left?.pids ?? []) if (running(pid)) process.kill(pid, "SIGKILL");
      if (left) rmSync(left.dir, { recursive: true, force: true });
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
