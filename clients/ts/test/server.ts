// Starts the real acpnormd binary on a free loopback port for the tests.
//
// The binary is $ACPNORMD_BIN; without it, it is built once from the module
// (`go build -o <tmp>/acpnormd ./cmd/acpnormd`).

import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { connect as netConnect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after } from "node:test";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { connect, type ConnectOptions, type NormalizerConnection } from "../src/index.js";

export const repoRoot = resolve(fileURLToPath(new URL("../../..", import.meta.url)));
export const recordingsDir = join(repoRoot, "test", "testdata", "recordings");

// What this module made that a test may leave behind: the processes it
// started and has not seen exit (a test that failed before it stopped
// them), and the directories it made. A test stops its processes; what is
// left is SIGKILLed once every test of the file ran (a child process
// would keep the test process alive), and every directory is removed when
// the test process exits (node --test runs each file in a process of its
// own).
const running = new Set<ChildProcess>();
const madeDirs = new Set<string>();
const killLeft = () => {
  for (const p of running) p.kill("SIGKILL");
};
after(killLeft);
process.once("exit", () => {
  killLeft();
  for (const d of madeDirs) rmSync(d, { recursive: true, force: true });
});

/** Starts a child process that is SIGKILLed, if still running, when this process exits. */
function spawnTracked(...args: Parameters<typeof spawn>): ChildProcess {
  const p = spawn(...args);
  running.add(p);
  p.once("exit", () => running.delete(p));
  p.once("error", () => running.delete(p));
  return p;
}

/** A fresh directory under the system's temporary one, removed when this process exits. */
function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  madeDirs.add(d);
  return d;
}

/** Removes a directory tempDir made, now. */
function removeDir(d: string): void {
  rmSync(d, { recursive: true, force: true });
  madeDirs.delete(d);
}

function binary(): string {
  const fromEnv = process.env.ACPNORMD_BIN;
  if (fromEnv) return fromEnv;
  const out = join(tempDir("acpnormd-"), "acpnormd");
  execFileSync("go", ["build", "-o", out, "./cmd/acpnormd"], {
    cwd: repoRoot,
    stdio: "inherit",
  });
  process.env.ACPNORMD_BIN = out;
  return out;
}

/**
 * A directory of fresh test certificates, keys and tokens (see
 * internal/testcerts): $ACPNORM_TEST_CERTS, or made once with
 * `go run ./test/certgen`.
 */
export function testCerts(): string {
  const fromEnv = process.env.ACPNORM_TEST_CERTS;
  if (fromEnv) return fromEnv;
  const out = tempDir("acpnorm-certs-");
  execFileSync("go", ["run", "./test/certgen", out], { cwd: repoRoot, stdio: "inherit" });
  process.env.ACPNORM_TEST_CERTS = out;
  return out;
}

export async function freeLoopbackPort(): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.once("error", fail);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => ok(port));
    });
  });
}

export interface RunningServer {
  addr: string;
  proc: ChildProcess;
  /** Everything the server wrote to stderr, for failure messages. */
  log(): string;
  /** True while the process runs. */
  alive(): boolean;
  /** SIGTERM, then SIGKILL after 10 s; resolves when it exited. */
  stop(): Promise<void>;
  /** SIGKILL (no drain, no goodbye); resolves when it exited. */
  kill(): Promise<void>;
}

/**
 * Starts acpnormd with extra flags `args` and waits until ListDialects
 * answers (15 s at most), connecting with `opts` (TLS files, token).
 */
export async function startServer(args: string[] = [], opts: ConnectOptions = {}): Promise<RunningServer> {
  const bin = binary();
  const addr = `127.0.0.1:${await freeLoopbackPort()}`;
  const proc = spawnTracked(bin, ["--listen", addr, "--metrics-listen=", ...args], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  proc.stderr!.setEncoding("utf8").on("data", (d: string) => {
    stderr = (stderr + d).slice(-20000);
  });
  let exited = false;
  const exit = new Promise<void>((ok) =>
    proc.once("exit", () => {
      exited = true;
      ok();
    }),
  );
  const server: RunningServer = {
    addr,
    proc,
    log: () => stderr,
    alive: () => !exited,
    async stop() {
      if (exited) return;
      proc.kill("SIGTERM");
      const timer = setTimeout(() => proc.kill("SIGKILL"), 10_000);
      await exit;
      clearTimeout(timer);
    },
    async kill() {
      if (exited) return;
      proc.kill("SIGKILL");
      await exit;
    },
  };
  const deadline = Date.now() + 15_000;
  let conn: NormalizerConnection | undefined;
  try {
    conn = connect(addr, opts);
    for (;;) {
      if (exited) throw new Error(`acpnormd exited at start:\n${stderr}`);
      try {
        await conn.client.listDialects({}, { timeoutMs: 1000 });
        return server;
      } catch (err) {
        if (Date.now() > deadline) {
          throw new Error(`acpnormd not ready on ${addr} after 15 s: ${err}\n${stderr}`);
        }
        await sleep(100);
      }
    }
  } catch (err) {
    await server.stop();
    throw err;
  } finally {
    conn?.close();
  }
}

export interface RunningRedis {
  /** redis://127.0.0.1:PORT/0, for acpnormd --store. */
  url: string;
  /** Its directory (--dir), removed by stop(). */
  dir: string;
  /** The pid of the redis-server running now, if one is. */
  pid(): number | undefined;
  /**
   * SIGKILLs the server and starts it again, empty (no persistence), on
   * the same port: what a store that lost its data looks like.
   */
  restart(): Promise<void>;
  /** SIGKILL, and removes its directory; resolves when it exited. */
  stop(): Promise<void>;
  /** Sends a signal (SIGSTOP, SIGCONT) to the running server. */
  signal(sig: NodeJS.Signals): void;
}

/**
 * Starts Debian's redis-server on a free loopback port, without
 * persistence, in a fresh directory; waits until it answers PING.
 */
export async function startRedis(): Promise<RunningRedis> {
  const port = await freeLoopbackPort();
  const dir = tempDir("acpnorm-redis-");
  let proc: ChildProcess | undefined;
  let exit: Promise<void> = Promise.resolve();
  const kill = async () => {
    if (proc && proc.exitCode === null && proc.signalCode === null) {
      proc.kill("SIGKILL");
      await exit;
    }
    proc = undefined;
  };
  const start = async () => {
    const p = spawnTracked(
      "redis-server",
      ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no"],
      { stdio: ["ignore", "ignore", "ignore"] },
    );
    proc = p;
    exit = new Promise<void>((ok) => {
      p.once("exit", () => ok());
      p.once("error", () => ok()); // not started: no exit follows
    });
    const deadline = Date.now() + 10_000;
    while (!(await ping(port))) {
      if (p.exitCode !== null || Date.now() > deadline) throw new Error(`redis-server on port ${port} did not start`);
      await sleep(50);
    }
  };
  const stop = async () => {
    await kill();
    removeDir(dir);
  };
  try {
    await start();
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    url: `redis://127.0.0.1:${port}/0`,
    dir,
    pid: () => proc?.pid,
    restart: async () => {
      await kill();
      await start();
    },
    stop,
    signal: (sig) => {
      proc?.kill(sig);
    },
  };
}

function ping(port: number): Promise<boolean> {
  return new Promise((ok) => {
    const s = netConnect(port, "127.0.0.1");
    let got = "";
    s.setTimeout(1000, () => {
      s.destroy();
      ok(false);
    });
    s.on("error", () => ok(false));
    s.on("connect", () => s.write("PING\r\n"));
    s.on("data", (d) => {
      got += d.toString();
      if (got.includes("\n")) {
        s.destroy();
        ok(got.startsWith("+PONG"));
      }
    });
  });
}
