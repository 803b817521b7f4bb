// Checks one run of an agent through `acpnormd proxy` (proxy.sh makes it):
//
//   node proxycheck.mjs --acpnormd BIN --direct D.ndjson --proxied P.ndjson \
//     --wire W.ndjson --record R.ndjson [--stderr AGENT.log]
//
// D and P are the harness client's recordings of the same scenario run
// directly and through the proxy; W is the proxy's --wire recording of P's
// run, R its --out record. It holds that
//   1. P and W carry the same messages byte for byte, in the same order each
//      way: what the client sent reached the agent, and what the agent sent
//      reached the client, untouched (the order between the two directions
//      is timing: each side records a message when it sees it);
//   2. P is D frame by frame each way, ignoring the timings and the agent's
//      own ids (each id is replaced by the order it first appeared in), and
//      how many live updates a call got before its next one: how often an
//      agent restates a running call's output is the timing of the
//      command's writes (OpenCode sent `ls: ` then the whole line in one
//      run, the whole line at once in the other), so of consecutive
//      in-progress updates of one call only the last is compared;
//   3. R is what `acpnormd replay --json --final` makes of W;
//   4. the proxy said nothing on stderr (lines "acpnormd proxy: ...").
// Exit status 1 when a check fails.

import fs from "node:fs";
import os from "node:os";
import { spawnSync } from "node:child_process";
import { isDeepStrictEqual, parseArgs } from "node:util";

const { values: opt } = parseArgs({
  options: {
    acpnormd: { type: "string" },
    direct: { type: "string" },
    proxied: { type: "string" },
    wire: { type: "string" },
    record: { type: "string" },
    stderr: { type: "string" },
  },
});
for (const k of ["acpnormd", "direct", "proxied", "wire", "record"]) {
  if (!opt[k]) {
    console.error(`proxycheck.mjs: --${k} is required`);
    process.exit(2);
  }
}

let failed = 0;
function check(name, problems) {
  if (problems.length === 0) {
    console.log(`pass  ${name}`);
    return;
  }
  failed++;
  console.log(`FAIL  ${name}`);
  for (const p of problems.slice(0, 5)) console.log(`      ${p}`);
  if (problems.length > 5) console.log(`      ... ${problems.length - 5} more`);
}

// lines reads a recording: [{dir, raw}] where raw is the message's text as
// recorded (the part after "msg":, up to the closing brace).
function lines(file, rename = (s) => s) {
  const out = [];
  for (const line of rename(fs.readFileSync(file, "utf8")).split("\n")) {
    if (!line.trim()) continue;
    const w = JSON.parse(line);
    const at = line.indexOf(',"msg":');
    out.push({ dir: w.dir, msg: w.msg, raw: line.slice(at + 7, -1) });
  }
  return out;
}

const byDir = (ls, dir) => ls.filter((l) => l.dir === dir);
const DIRS = ["client->agent", "agent->client"];

// The harness renames its private paths in its own recording (record.mjs);
// the proxy's wire has them as they were. Rename them the same way.
function renamePrivate(text) {
  const tmp = os.tmpdir().replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const m = new RegExp(`${tmp}/acpnorm-agents-[A-Za-z0-9]{6}`).exec(text);
  if (!m) return text;
  const root = m[0];
  const home = `${root}/home`;
  const work = `${home}/work/proj`;
  return text
    .split(work).join("/home/dev/work/proj")
    .split(home).join("/home/dev")
    .split(root).join("/tmp/harness")
    .split(work.replaceAll("/", "-")).join("-home-dev-work-proj");
}

const direct = lines(opt.direct);
const proxied = lines(opt.proxied);
const wire = lines(opt.wire, renamePrivate);

// 1. The relay is untouched.
{
  const problems = [];
  if (proxied.length === 0) problems.push(`${opt.proxied} is empty: the proxied session did not run`);
  for (const dir of DIRS) {
    const a = byDir(proxied, dir);
    const b = byDir(wire, dir);
    if (a.length !== b.length) problems.push(`${dir}: the client recorded ${a.length} messages, the proxy ${b.length}`);
    for (let i = 0; i < Math.min(a.length, b.length); i++) {
      if (a[i].raw !== b[i].raw) problems.push(`${dir} message ${i + 1}: the client has ${a[i].raw.slice(0, 120)}, the proxy ${b[i].raw.slice(0, 120)}`);
    }
  }
  check("the client's recording and the proxy's wire carry the same bytes each way", problems);
}

// canon replaces every id by the order it first appeared in (per run), so
// two runs compare by structure: the same id in the same places.
function canonizer() {
  const seen = new Map();
  const idKey = /(^id$|Id$|ID$|_id$)/;
  const walk = (v, key) => {
    if (Array.isArray(v)) return v.map((x) => walk(x, key));
    if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, k)]));
    if (typeof v === "string" && key && idKey.test(key)) {
      if (!seen.has(v)) seen.set(v, `#id${seen.size + 1}`);
      return seen.get(v);
    }
    if (typeof v === "string") {
      for (const [id, name] of seen) if (id.length >= 8 && v.includes(id)) v = v.split(id).join(name);
    }
    return v;
  };
  return (msg) => walk(msg, "");
}

// liveCall is the tool call id of a session/update that restates a running
// call (a tool_call_update without a final status), else undefined.
function liveCall(msg) {
  const u = msg?.method === "session/update" ? msg.params?.update : undefined;
  if (u?.sessionUpdate !== "tool_call_update" || u.status === "completed" || u.status === "failed") return undefined;
  return u.toolCallId;
}

// lastLiveUpdates keeps, of consecutive live updates of one call, the last.
export function lastLiveUpdates(msgs) {
  return msgs.filter((m, i) => {
    const id = liveCall(m);
    return id === undefined || liveCall(msgs[i + 1]) !== id;
  });
}

// 2. Through the proxy the agent does what it does without.
{
  const problems = [];
  for (const dir of DIRS) {
    const ca = canonizer();
    const cb = canonizer();
    const a = lastLiveUpdates(byDir(direct, dir).map((l) => ca(l.msg)));
    const b = lastLiveUpdates(byDir(proxied, dir).map((l) => cb(l.msg)));
    if (a.length !== b.length) problems.push(`${dir}: ${a.length} messages direct, ${b.length} through the proxy`);
    for (let i = 0; i < Math.min(a.length, b.length); i++) {
      if (!isDeepStrictEqual(a[i], b[i])) {
        problems.push(`${dir} message ${i + 1}: direct ${JSON.stringify(a[i]).slice(0, 160)}; proxied ${JSON.stringify(b[i]).slice(0, 160)}`);
      }
    }
  }
  check("the proxied run is the direct run, frame by frame each way (ids and timings aside)", problems);
}

// 3. The record is replay's.
{
  const problems = [];
  const record = fs.readFileSync(opt.record, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
  if (record.length === 0) problems.push(`${opt.record} is empty`);
  const session = record[0]?.sessionId ?? "none";
  const r = spawnSync(opt.acpnormd, ["replay", "--json", "--final", "--session", session, opt.wire], { encoding: "utf8", maxBuffer: 1 << 30 });
  if (r.status !== 0) problems.push(`acpnormd replay exited ${r.status}: ${r.stderr.trim()}`);
  const replayed = r.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l));
  const key = (x) => x.toolCallId;
  const want = new Map(replayed.map((x) => [key(x), x]));
  if (record.length !== replayed.length) problems.push(`the record has ${record.length} calls, replay ${replayed.length}`);
  for (const x of record) {
    const w = want.get(key(x));
    if (!w) problems.push(`call ${key(x)} is not in replay's record`);
    else if (!isDeepStrictEqual(w, x)) problems.push(`call ${key(x)}: replay ${JSON.stringify(w).slice(0, 200)}; proxy ${JSON.stringify(x).slice(0, 200)}`);
    if (x.state !== "SHELL_STATE_ENDED") problems.push(`call ${key(x)} is ${x.state} in the record; finals are ENDED`);
  }
  check(`the --out record (${record.length} calls) is replay's of the --wire recording`, problems);
}

// 4. Nothing was dropped, cut short or refused.
if (opt.stderr) {
  const said = fs.readFileSync(opt.stderr, "utf8").split("\n").filter((l) => l.startsWith("acpnormd proxy:"));
  check("the proxy said nothing on stderr", said);
}

process.exit(failed ? 1 : 0);
