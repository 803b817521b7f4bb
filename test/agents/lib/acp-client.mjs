// A raw ACP client: it starts an agent over stdio, speaks JSON-RPC 2.0 (one
// message per line), and writes every message in both directions to a
// recording, in the format acpnormd replay reads:
//
//   {"dir": "agent->client" | "client->agent", "t_ms": N, "msg": <message>}
//
// Agent messages are written byte for byte as the agent sent them.

import { spawn } from "node:child_process";
import fs from "node:fs";

export class AcpClient {
  // t0 (ms since the epoch) and append let a second agent process (a
  // restart for session/load) continue the same recording; tag is added to
  // each of its records (e.g. {"agent_proc": 2}).
  constructor({ command, args = [], env, cwd, recordFile, stderrFile, onRequest, onNotification, t0, append = false, tag = null }) {
    this.t0 = t0 ?? Date.now();
    this.tag = tag ? "," + JSON.stringify(tag).slice(1, -1) : "";
    this.nextId = 0;
    this.pending = new Map();
    this.rec = fs.openSync(recordFile, append ? "a" : "w");
    this.onRequest = onRequest;
    this.onNotification = onNotification ?? (() => {});
    this.closed = false;
    this.child = spawn(command, args, { env, cwd, stdio: ["pipe", "pipe", stderrFile ? fs.openSync(stderrFile, append ? "a" : "w") : "ignore"], detached: true });
    this.exited = new Promise((resolve) => this.child.on("exit", (code, signal) => resolve({ code, signal })));
    this.exited.then((st) => {
      this.closed = true;
      for (const { reject } of this.pending.values()) reject(new Error(`agent exited (${st.code ?? st.signal}) before answering`));
      this.pending.clear();
    });
    this.child.on("error", (err) => {
      this.closed = true;
      for (const { reject } of this.pending.values()) reject(err);
      this.pending.clear();
    });
    this.child.stdin.on("error", () => {}); // a dead agent: the exit handler reports it
    let buf = Buffer.alloc(0);
    this.child.stdout.on("data", (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      let nl;
      while ((nl = buf.indexOf(10)) >= 0) {
        const line = buf.subarray(0, nl).toString("utf8").trim();
        buf = buf.subarray(nl + 1);
        if (line) this.#fromAgent(line);
      }
    });
  }

  #write(dir, raw) {
    if (this.rec === null) return; // closed: the session is over
    fs.writeSync(this.rec, `{"dir":"${dir}","t_ms":${Date.now() - this.t0},"msg":${raw}${this.tag}}\n`);
  }

  #send(msg) {
    const raw = JSON.stringify(msg);
    this.#write("client->agent", raw);
    if (!this.closed) this.child.stdin.write(raw + "\n");
  }

  #fromAgent(line) {
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      return; // not a JSON-RPC message (a log line on stdout): not part of the wire
    }
    this.#write("agent->client", line);
    if (msg.method !== undefined && msg.id !== undefined) {
      Promise.resolve()
        .then(() => this.onRequest(msg.method, msg.params))
        .then(
          (result) => this.#send({ jsonrpc: "2.0", id: msg.id, result: result ?? null }),
          (err) => this.#send({ jsonrpc: "2.0", id: msg.id, error: { code: err.code ?? -32603, message: String(err.message ?? err) } }),
        );
    } else if (msg.method !== undefined) {
      this.onNotification(msg.method, msg.params);
    } else if (msg.id !== undefined && this.pending.has(msg.id)) {
      const { resolve, reject } = this.pending.get(msg.id);
      this.pending.delete(msg.id);
      if (msg.error) {
        const e = new Error(`${msg.error.message ?? "error"} (code ${msg.error.code})`);
        e.rpc = msg.error;
        reject(e);
      } else resolve(msg.result);
    }
  }

  request(method, params) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (this.closed) return reject(new Error(`agent is gone; cannot send ${method}`));
      this.pending.set(id, { resolve, reject });
      this.#send({ jsonrpc: "2.0", id, method, params });
    });
  }

  notify(method, params) {
    this.#send({ jsonrpc: "2.0", method, params });
  }

  elapsed() {
    return Date.now() - this.t0;
  }

  // close ends the agent: stdin first, then SIGTERM, then SIGKILL to its
  // whole process group (agents start helpers of their own).
  async close(graceMs = 3000) {
    try {
      this.child.stdin.end();
    } catch {}
    const timeout = (ms) => new Promise((r) => setTimeout(() => r("timeout"), ms));
    if ((await Promise.race([this.exited, timeout(graceMs)])) === "timeout") {
      try {
        process.kill(-this.child.pid, "SIGTERM");
      } catch {}
      if ((await Promise.race([this.exited, timeout(graceMs)])) === "timeout") {
        try {
          process.kill(-this.child.pid, "SIGKILL");
        } catch {}
        await this.exited;
      }
    }
    try {
      process.kill(-this.child.pid, "SIGKILL"); // leftovers of the group
    } catch {}
    fs.closeSync(this.rec);
    this.rec = null;
  }
}
