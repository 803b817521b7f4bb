// Records one ACP session of one real agent running a scenario against the
// scripted model. Run it inside a network namespace with only loopback up
// (run.sh does: unshare -n); it refuses to run where it can reach anything
// but loopback.
//
//   node record.mjs --agent ID[@VERSION] --variant NAME --scenario FILE --out FILE.ndjson
//                   [--wrap JSON]
//
// ID is the newest build of the agent, ID@VERSION an older one
// (pkgs/ID@VERSION, agents.mjs); it refuses a build whose installed version
// is not the one its workspace pins, whose platform package (or any package
// it runs) is not the one pinned for it (agents.mjs checkInstalled), or that
// names itself another build in its initialize answer (agentInfo.version).
//
// --wrap '["acpnormd","proxy","--wire","W","--"]' starts the agent through
// that command (the agent's command and arguments go after it), as a client
// configured with `acpnormd proxy` would (proxy.sh does).
//
// It makes a private HOME holding a work directory (alpha.txt, beta.md,
// gamma.go, notes.txt), starts the model on 127.0.0.1, starts the agent with
// that HOME, and runs initialize, session/new and one session/prompt per
// step, answering permission asks (allow, or reject where the step says so)
// and sending session/cancel where the step says so. A turn that does not end
// within the step's limit is cancelled by the harness (noted in the
// sidecar FILE.meta.json). Home paths are renamed to /home/dev afterwards.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { AcpClient } from "./lib/acp-client.mjs";
import { startModelServer } from "./model/server.mjs";
import { agentInfoProblem, checkInstalled, installedVersion, selectRuns } from "./agents.mjs";
import { loadScenario, writeHomeFiles } from "./lib/scenario.mjs";
import { ClientTerminals } from "./lib/terminals.mjs";
import { endStrays } from "./lib/strays.mjs";
import { renamePrivatePaths } from "./lib/privatepaths.mjs";

const { values: opt } = parseArgs({
  options: {
    agent: { type: "string" },
    variant: { type: "string" },
    scenario: { type: "string" },
    out: { type: "string" },
    "turn-timeout-ms": { type: "string", default: "45000" },
    keep: { type: "boolean", default: false },
    wrap: { type: "string" },
  },
});
for (const k of ["agent", "scenario", "out"]) {
  if (!opt[k]) {
    console.error(`record.mjs: --${k} is required`);
    process.exit(2);
  }
}

let run;
try {
  [run] = selectRuns([opt.variant ? `${opt.agent}/${opt.variant}` : opt.agent]);
} catch (err) {
  console.error(`record.mjs: ${err.message}`);
  process.exit(2);
}
const { agent, build, variant } = run;
const installed = installedVersion(agent, build);
if (installed !== build.pkgVersion) {
  console.error(`record.mjs: ${agent.pkg} ${build.pkgVersion} is not installed for ${build.workspace} (found ${installed ?? "nothing"}; npm ci -w ${build.workspace} in test/agents)`);
  process.exit(2);
}
try {
  checkInstalled(build);
} catch (err) {
  console.error(`record.mjs: ${err.message}`);
  process.exit(2);
}
const scenario = loadScenario(opt.scenario);
const { steps } = scenario;
const turnTimeout = Number(opt["turn-timeout-ms"]);

// Only loopback: refuse to run with a route to the outside.
const ifaces = Object.entries(os.networkInterfaces()).filter(([name]) => name !== "lo");
if (ifaces.length > 0 && !process.env.ACPNORM_AGENTS_ALLOW_NETWORK) {
  console.error(`record.mjs: network interfaces other than lo are up (${ifaces.map(([n]) => n).join(", ")}); run me inside unshare -n (run.sh does)`);
  process.exit(2);
}

const root = fs.mkdtempSync(path.join(os.tmpdir(), "acpnorm-agents-"));
const home = path.join(root, "home");
const work = path.join(home, "work", "proj");
fs.mkdirSync(work, { recursive: true });
for (const [f, text] of [["alpha.txt", "alpha\n"], ["beta.md", "# beta\n"], ["gamma.go", "package gamma\n"], ["notes.txt", "keep me\n"]]) {
  fs.writeFileSync(path.join(work, f), text);
}
writeHomeFiles(home, scenario);

const out = path.resolve(opt.out);
const rawFile = path.join(root, "wire.ndjson");
const modelLog = out.replace(/\.ndjson$/, "") + ".model.log";
const agentLog = out.replace(/\.ndjson$/, "") + ".agent.log";
fs.rmSync(modelLog, { force: true });

const model = await startModelServer({ steps, logFile: modelLog });
const baseEnv = {
  PATH: process.env.PATH,
  HOME: home,
  USER: "dev",
  LOGNAME: "dev",
  SHELL: "/bin/bash",
  LANG: "C.UTF-8",
  TERM: "dumb",
  TMPDIR: path.join(root, "tmp"),
  XDG_CONFIG_HOME: path.join(home, ".config"),
  XDG_DATA_HOME: path.join(home, ".local", "share"),
  XDG_STATE_HOME: path.join(home, ".local", "state"),
  XDG_CACHE_HOME: path.join(home, ".cache"),
  NO_UPDATE_NOTIFIER: "1",
  DO_NOT_TRACK: "1",
};
fs.mkdirSync(baseEnv.TMPDIR, { recursive: true });

// What the harness did, per step.
const meta = { agent: agent.id, package: agent.pkg, version: build.version, variant: variant.name, terminalMeta: variant.terminalMeta, clientTerminal: !!variant.clientTerminal, ...(variant.air ? { airClient: true } : {}), ...(variant.protocol ? { protocolVersion: variant.protocol } : {}), scenario: path.basename(opt.scenario), steps: [] };

let env;
try {
  env = { ...baseEnv, ...agent.setup({ home, work, modelUrl: model.url, variant, build, env: baseEnv }) };
} catch (err) {
  meta.error = `setup: ${err.message}`;
  console.error(`record.mjs: ${agent.id}: ${meta.error}`);
}

let turn = null; // the running turn: { step, cancelSent, sawCall, timer }
let client = null;
let terminals = null;
let sessionId;
const t0 = Date.now();

// startAgent starts one agent process; proc > 1 is a restart (for
// session/load) that continues the same recording.
function startAgent(proc) {
  let [cmd, args] = agent.command({ variant, build });
  if (opt.wrap) {
    const wrap = JSON.parse(opt.wrap);
    [cmd, args] = [wrap[0], [...wrap.slice(1), cmd, ...args]];
  }
  terminals = variant.clientTerminal ? new ClientTerminals({ cwd: work, env: baseEnv }) : null;
  const mine = terminals;
  client = new AcpClient({
    command: cmd,
    args,
    env,
    cwd: work,
    recordFile: rawFile,
    stderrFile: agentLog,
    t0,
    append: proc > 1,
    tag: proc > 1 ? { agent_proc: proc } : null,
    onRequest: async (method, params) => {
      if (method === "session/request_permission") {
        sawCall();
        if (!turn || turn.cancelSent) return { outcome: { outcome: "cancelled" } };
        const want = turn.step.client?.permission === "reject" ? ["reject_once", "reject_always"] : ["allow_once", "allow_always"];
        const options = params?.options ?? [];
        const pick = want.map((k) => options.find((o) => o.kind === k)).find(Boolean);
        if (!pick) return { outcome: { outcome: "cancelled" } };
        turn.answers.push(pick.kind);
        return { outcome: { outcome: "selected", optionId: pick.optionId } };
      }
      if (mine && mine.handles(method)) {
        if (method === "terminal/create") sawCall();
        if (turn) (turn.terminal ??= {})[method] = (turn.terminal[method] ?? 0) + 1;
        return mine.handle(method, params);
      }
      const e = new Error(`the harness client does not offer ${method}`);
      e.code = -32601;
      throw e;
    },
    onNotification: (method, params) => {
      const kind = params?.update?.sessionUpdate;
      // ACP v2 ends a turn with a state_update idle, not the prompt's
      // answer.
      if (method === "session/update" && kind === "state_update" && params.update.state === "idle" && turn?.idle) turn.idle(params.update);
      if (method === "session/update" && (kind === "tool_call" || kind === "tool_call_update")) sawCall();
      if (method === "session/update" && replay) replay.updates++;
    },
  });
  return client;
}

// stopAgent ends the agent and what it left: its process group, the client
// terminals it opened, and any process still running with the private HOME
// (agents that start detached daemons, such as Cline's hub), by pid.
async function stopAgent() {
  if (!client || client.stopped) return;
  client.stopped = true;
  await client.close();
  if (terminals) await terminals.close();
  meta.strays = [...(meta.strays ?? []), ...endStrays(home)];
}

function sawCall() {
  if (!turn || turn.sawCall) return;
  turn.sawCall = true;
  const after = turn.step.client?.cancel_after_ms;
  if (after !== undefined) turn.timer = setTimeout(() => cancel("step"), after);
}

function cancel(why) {
  if (!turn || turn.cancelSent) return;
  turn.cancelSent = why;
  client.notify("session/cancel", { sessionId });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
function within(p, ms) {
  return Promise.race([p.then((v) => ({ v }), (e) => ({ e })), sleep(ms).then(() => ({ timeout: true }))]);
}

const caps = { fs: { readTextFile: false, writeTextFile: false }, terminal: !!variant.clientTerminal };
if (variant.terminalMeta) caps._meta = { terminal_output: true };
// The JetBrains AIR extension, in the shape claude-agent-acp's isAirClient
// reads: an object under _meta.jetbrains.air (version 1, no optional AIR
// capabilities declared).
if (variant.air) caps._meta = { ...caps._meta, jetbrains: { air: { version: 1, capabilities: [] } } };
const clientInfo = { name: "acpnorm-harness", title: "acpnorm agent harness", version: "0.1.0" };

// ACP v2 (variant.protocol 2): initialize names the client `info` and its
// capabilities `capabilities`, with no fs or terminal (a v2 client has
// neither); the _meta extensions are the same.
const v2 = variant.protocol === 2;
const v2caps = caps._meta ? { _meta: caps._meta } : {};

async function initialize() {
  const params = v2 ? { protocolVersion: 2, info: clientInfo, capabilities: v2caps } : { protocolVersion: 1, clientCapabilities: caps, clientInfo };
  const init = await within(client.request("initialize", params), 60000);
  if (!init.v) throw new Error(`initialize: ${init.e?.message ?? "no answer in 60 s"}`);
  if (agent.authMethod) {
    const a = await within(client.request("authenticate", { methodId: agent.authMethod }), 30000);
    if (a.e || a.timeout) throw new Error(`authenticate: ${a.e?.message ?? "no answer in 30 s"}`);
  }
  return init.v;
}

let replay = null; // {updates} while a session/load replays
let exitCode = 0;
try {
  if (meta.error) throw new Error(meta.error);
  startAgent(1);
  const init = await initialize();
  meta.agentInfo = (v2 ? init.info : init.agentInfo) ?? null;
  // Nothing is recorded under the name of a build that did not run.
  const wrong = agentInfoProblem(build, meta.agentInfo);
  if (wrong) throw new Error(wrong);
  // v2 restores every session with session/resume (replayFrom start
  // replays it, as v1's session/load).
  meta.loadSession = v2 || !!init.agentCapabilities?.loadSession;
  const sn = await within(client.request("session/new", { cwd: work, mcpServers: [] }), 60000);
  if (!sn.v) throw new Error(`session/new: ${sn.e?.message ?? "no answer in 60 s"}`);
  sessionId = sn.v.sessionId;
  if (agent.afterSession) await agent.afterSession({ client, sessionId, variant, build, session: sn.v });

  for (const [k, step] of steps.entries()) {
    turn = { step, cancelSent: null, sawCall: false, timer: null, answers: [] };
    const text = `@@STEP ${k}@@ Step ${k} (${step.id}): please run this exact shell command in the current directory and report the result: ${step.command}`;
    const started = client.elapsed();
    let p = client.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });
    if (v2) {
      // The v2 answer comes once the prompt is taken in ({messageId}); the
      // turn ends with the state_update idle, whose stopReason it has.
      const idle = new Promise((resolve) => (turn.idle = resolve));
      p = p.then(() => idle);
    }
    let r = await within(p, step.turn_timeout_ms ?? turnTimeout);
    if (r.timeout) {
      cancel("harness: the turn did not end in time");
      r = await within(p, 15000);
    }
    clearTimeout(turn.timer);
    const m = { id: step.id, startedMs: started, endedMs: client.elapsed(), sawCall: turn.sawCall, answers: turn.answers, cancelSent: turn.cancelSent };
    if (turn.terminal) m.terminal = turn.terminal;
    if (r.v) m.stopReason = r.v.stopReason;
    if (r.e) m.error = r.e.message;
    if (r.timeout) m.error = "the turn never ended, even after session/cancel";
    // What really happened to the files the step must not touch.
    for (const f of step.truth.files_kept ?? []) (m.files ??= {})[f] = fs.existsSync(path.join(work, f));
    meta.steps.push(m);
    console.error(`  step ${k} ${step.id}: ${m.stopReason ?? m.error}${m.cancelSent ? ` (cancel: ${m.cancelSent})` : ""}`);
    if (r.timeout || client.closed) break;
  }
  turn = null;

  // session/load: end the agent, start it again, load the same session and
  // record what it replays. Agents replay before they answer the load (some
  // after it), so the harness waits a few quiet seconds after the answer.
  if (scenario.load) {
    meta.load = { asked: true };
    if (!meta.loadSession) {
      meta.load.skipped = "initialize did not say loadSession: true";
    } else {
      await stopAgent();
      startAgent(2);
      await initialize();
      replay = { updates: 0 };
      meta.load.startedMs = client.elapsed();
      const [method, params] = v2 ? ["session/resume", { sessionId, cwd: work, mcpServers: [], replayFrom: { type: "start" } }] : ["session/load", { sessionId, cwd: work, mcpServers: [] }];
      const l = await within(client.request(method, params), 60000);
      if (l.e || l.timeout) meta.load.error = `${method}: ${l.e?.message ?? "no answer in 60 s"}`;
      let seen = -1;
      while (seen !== replay.updates) {
        seen = replay.updates;
        await sleep(2000);
      }
      meta.load.endedMs = client.elapsed();
      meta.load.replayedUpdates = replay.updates;
      console.error(`  session/load: ${meta.load.error ?? `${replay.updates} updates replayed`}`);
    }
  }
} catch (err) {
  meta.error = err.message;
  console.error(`record.mjs: ${agent.id}: ${err.message}`);
  exitCode = 1;
} finally {
  turn = null;
  await stopAgent();
  await model.close();
}

// Rename the private paths, so recordings do not change with the temp dir.
let wire = fs.existsSync(rawFile) ? fs.readFileSync(rawFile, "utf8") : "";
wire = renamePrivatePaths(wire, { work, home, root });
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(out, wire);
fs.writeFileSync(out.replace(/\.ndjson$/, "") + ".meta.json", JSON.stringify(meta, null, 2).split(home).join("/home/dev").split(path.dirname(new URL(import.meta.url).pathname)).join("test/agents") + "\n");
if (!opt.keep) fs.rmSync(root, { recursive: true, force: true });
else console.error(`record.mjs: kept ${root}`);
process.exit(exitCode);
