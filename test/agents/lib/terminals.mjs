// The client side of ACP's client-owned terminals (terminal/create,
// terminal/output, terminal/wait_for_exit, terminal/kill, terminal/release),
// for a harness client that advertises clientCapabilities.terminal: true.
// The commands really run: a terminal is a child process with stdout and
// stderr merged into one output, as a terminal shows them.
//
// - create {command, args?, env?: [{name, value}], cwd?, outputByteLimit?}
//   starts the process and answers {terminalId} at once. With args, command
//   is the executable and args its arguments; without, agents send the whole
//   shell line as command (Droid, claude-code-acp), so it runs as `bash -c`.
// - output answers {output, truncated, exitStatus?}: everything retained so
//   far. Past outputByteLimit the oldest bytes are dropped (cut from the
//   beginning, at a UTF-8 character boundary) and truncated is true. While
//   the process runs, an incomplete UTF-8 sequence at the end is held back
//   until its last byte arrives; bytes that are not UTF-8 become U+FFFD.
// - wait_for_exit answers {exitCode, signal} once the process has ended
//   (signal is the name, e.g. "SIGKILL", with exitCode null).
// - kill ends the process (SIGTERM to its process group, SIGKILL 2 s later);
//   the terminal stays readable.
// - release kills it if it still runs and forgets the id; later requests
//   for that id get an error, and a wait_for_exit still open is answered when
//   the process ends.

import { spawn } from "node:child_process";

// The default bound on retained output when the agent gives none.
const DEFAULT_LIMIT = 16 << 20;
// At most this many terminals at once: an agent that never releases cannot
// make the harness run unbounded processes.
const MAX_TERMINALS = 64;

function rpcError(code, message) {
  const e = new Error(message);
  e.code = code;
  return e;
}

// utf8Start returns the first index >= i in buf that does not fall inside a
// multi-byte UTF-8 sequence (continuation bytes are 0b10xxxxxx), so that a
// cut there keeps whole characters.
function utf8Start(buf, i) {
  let j = i;
  while (j < buf.length && j - i < 3 && (buf[j] & 0xc0) === 0x80) j++;
  return j;
}

// completeEnd returns the end of the bytes that hold no incomplete UTF-8
// sequence at the tail.
function completeEnd(buf) {
  for (let back = 1; back <= Math.min(3, buf.length); back++) {
    const b = buf[buf.length - back];
    if ((b & 0xc0) === 0x80) continue; // continuation: look further back
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return need > back ? buf.length - back : buf.length;
  }
  return buf.length;
}

class Terminal {
  constructor(id, { command, args, env, cwd, outputByteLimit }, base) {
    this.id = id;
    this.limit = Number.isInteger(outputByteLimit) && outputByteLimit >= 0 ? outputByteLimit : DEFAULT_LIMIT;
    this.buf = Buffer.alloc(0);
    this.truncated = false;
    this.exit = null; // {exitCode, signal} once ended
    const extra = {};
    for (const e of Array.isArray(env) ? env : []) if (e && typeof e.name === "string") extra[e.name] = String(e.value ?? "");
    const opts = { cwd: cwd || base.cwd, env: { ...base.env, ...extra }, stdio: ["ignore", "pipe", "pipe"], detached: true };
    const hasArgs = Array.isArray(args) && args.length > 0;
    this.child = hasArgs ? spawn(command, args.map(String), opts) : spawn("bash", ["-c", command], opts);
    this.exited = new Promise((resolve) => {
      this.child.on("error", (err) => {
        this.startError = err;
        if (!this.exit) this.exit = { exitCode: null, signal: null };
        resolve(this.exit);
      });
      // The status is known at exit; the output is complete once the pipes
      // close, which a background child holding them can delay: wait for
      // that at most 500 ms.
      this.child.on("exit", (code, signal) => {
        const st = { exitCode: code ?? null, signal: signal ?? null };
        const done = () => {
          if (this.exit) return;
          this.exit = st;
          clearTimeout(this.killTimer);
          resolve(this.exit);
        };
        this.child.once("close", done);
        setTimeout(done, 500);
      });
    });
    const take = (chunk) => this.#append(chunk);
    this.child.stdout.on("data", take);
    this.child.stderr.on("data", take);
  }

  #append(chunk) {
    this.buf = Buffer.concat([this.buf, chunk]);
    if (this.buf.length > this.limit) {
      const cut = utf8Start(this.buf, this.buf.length - this.limit);
      this.buf = this.buf.subarray(cut);
      this.truncated = true;
    }
  }

  output() {
    const end = this.exit ? this.buf.length : completeEnd(this.buf);
    const r = { output: this.buf.subarray(0, end).toString("utf8"), truncated: this.truncated };
    if (this.exit) r.exitStatus = { ...this.exit };
    return r;
  }

  kill() {
    if (this.exit) return;
    const group = (sig) => {
      try {
        process.kill(-this.child.pid, sig);
      } catch {}
    };
    group("SIGTERM");
    this.killTimer = setTimeout(() => group("SIGKILL"), 2000);
  }
}

export class ClientTerminals {
  // base: {cwd, env}: the session's directory and the environment commands
  // get (the agent's env entries are added to it).
  constructor(base) {
    this.base = base;
    this.terminals = new Map();
    this.all = new Set();
    this.next = 1;
  }

  #get(params) {
    const t = this.terminals.get(params?.terminalId);
    if (!t) throw rpcError(-32602, `unknown terminal ${JSON.stringify(params?.terminalId)}`);
    return t;
  }

  // handles says whether method is one of the terminal methods.
  handles(method) {
    return typeof method === "string" && method.startsWith("terminal/");
  }

  async handle(method, params) {
    switch (method) {
      case "terminal/create": {
        if (typeof params?.command !== "string" || params.command === "") throw rpcError(-32602, "terminal/create: command must be a non-empty string");
        if (this.terminals.size >= MAX_TERMINALS) throw rpcError(-32603, `terminal/create: ${MAX_TERMINALS} terminals are open; release one first`);
        const id = `term_${this.next++}`;
        const t = new Terminal(id, params, this.base);
        // A command that cannot start is an error answer, as a client says
        // it could not do it.
        const started = await Promise.race([
          new Promise((r) => t.child.once("spawn", () => r(true))),
          t.exited.then(() => !t.startError),
        ]);
        if (!started) throw rpcError(-32603, `terminal/create: ${t.startError?.message ?? "the command did not start"}`);
        this.terminals.set(id, t);
        this.all.add(t);
        return { terminalId: id };
      }
      case "terminal/output":
        return this.#get(params).output();
      case "terminal/wait_for_exit": {
        const t = this.#get(params);
        const st = await t.exited;
        return { exitCode: st.exitCode, signal: st.signal };
      }
      case "terminal/kill":
        this.#get(params).kill();
        return {};
      case "terminal/release": {
        const t = this.#get(params);
        t.kill();
        this.terminals.delete(t.id);
        return {};
      }
      default:
        throw rpcError(-32601, `the harness client does not offer ${method}`);
    }
  }

  // close kills every process still running and waits for them (bounded).
  async close() {
    for (const t of this.all) t.kill();
    await Promise.race([Promise.all([...this.all].map((t) => t.exited)), new Promise((r) => setTimeout(r, 5000))]);
    for (const t of this.all) {
      if (!t.exit) {
        try {
          process.kill(-t.child.pid, "SIGKILL");
        } catch {}
      }
    }
  }
}
