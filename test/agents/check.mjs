// Checks recordings against their scenario: plays each through the real
// acpnormd binary (replay --json), folds the revisions per call as a client
// does, ties each call to the prompt turn it started in, and holds the final
// ShellExec of each step against the truth of that step. Prints a table
// (run x step) and writes it, with the details, to --table (markdown) and
// --json.
//
//   node check.mjs --acpnormd BIN --scenario FILE [--table F.md] [--json F.json] REC.ndjson...
//
// A step's result is pass, FAIL, xfail (failed as expectations.json says it
// will, for the reason given there) or XPASS (listed there but passed now:
// the entry is stale). The exit status is 1 when any step is FAIL.

import fs from "node:fs";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { parseArgs } from "node:util";
import { loadScenario } from "./lib/scenario.mjs";
import { checkCall, foldRevisions, loadProblems } from "./lib/truth.mjs";

const here = path.dirname(new URL(import.meta.url).pathname);
const { values: opt, positionals: files } = parseArgs({
  allowPositionals: true,
  options: {
    acpnormd: { type: "string" },
    scenario: { type: "string" },
    table: { type: "string" },
    json: { type: "string" },
    expectations: { type: "string", default: path.join(here, "expectations.json") },
  },
});
if (!opt.acpnormd || !opt.scenario || files.length === 0) {
  console.error("usage: node check.mjs --acpnormd BIN --scenario FILE [--table F.md] [--json F.json] REC.ndjson...");
  process.exit(2);
}
const scenario = loadScenario(opt.scenario);
const expectations = JSON.parse(fs.readFileSync(opt.expectations, "utf8"));

// turns finds each session/prompt of a recording: its line number and the
// step marker in its text.
function turns(lines) {
  const out = [];
  lines.forEach((l, i) => {
    let w;
    try {
      w = JSON.parse(l);
    } catch {
      return;
    }
    const m = w.msg ?? w;
    if (w.dir === "client->agent" && m.method === "session/prompt") {
      const text = (m.params?.prompt ?? []).map((p) => p.text ?? "").join(" ");
      const k = /@@STEP (\d+)@@/.exec(text);
      out.push({ line: i + 1, step: k ? Number(k[1]) : -1 });
    }
  });
  return out;
}

// replayCalls plays a recording through acpnormd and folds each call's
// revisions (foldRevisions), and returns the frame errors acpnormd reported.
function replayCalls(file) {
  const r = spawnSync(opt.acpnormd, ["replay", "--json", file], { encoding: "utf8", maxBuffer: 1 << 30 });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(r.stderr.trim() || `exit status ${r.status}`);
  const frameErrors = r.stderr.split("\n").filter((l) => l.startsWith("frame error:"));
  const execs = r.stdout.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
  return { calls: foldRevisions(execs), frameErrors, execs };
}

// restartLine finds the first record of the second agent process (the
// restart for session/load: "agent_proc": 2), or 0.
function restartLine(lines) {
  for (const [i, l] of lines.entries()) {
    try {
      if (JSON.parse(l).agent_proc === 2) return i + 1;
    } catch {}
  }
  return 0;
}

// frameErrorLine is the line a "frame error: line N: ..." names.
const frameErrorLine = (e) => Number(/^frame error: line (\d+)/.exec(e)?.[1] ?? 0);


// expectationFor finds the entry for a step, the most specific first:
// "agent@version/variant:scenario", "agent@version:scenario",
// "agent@version/variant", "agent@version" (one build: what an older build
// does differently), then "agent/variant:scenario", "agent:scenario",
// "agent/variant" and "agent" (every build; scenario is the scenario
// file's name without .json: an entry for one scenario only, such as what a
// session/load replay changes). An entry is the reason, or {"reason": ...,
// "sometimes": true} for an agent race that fails only some runs (no XPASS
// when it passes), or null: the step must pass there although a broader
// entry lists it (a replay that fills in what the live run lacked).
const scenarioName = path.basename(opt.scenario, ".json");
function expectationFor(run, stepId) {
  const [agent, variant] = [run.agent, run.variant];
  const build = `${agent}@${run.version}`;
  const keys = [`${build}/${variant}:${scenarioName}`, `${build}:${scenarioName}`, `${build}/${variant}`, build, `${agent}/${variant}:${scenarioName}`, `${agent}:${scenarioName}`, `${agent}/${variant}`, agent];
  const e = keys.map((k) => expectations[k]?.[stepId]).find((x) => x !== undefined) ?? null;
  if (e === null || typeof e === "string") return e === null ? null : { reason: e, sometimes: false };
  return { reason: e.reason, sometimes: !!e.sometimes };
}

const runs = [];
let failed = false;
for (const file of files) {
  const name = path.basename(file, ".ndjson");
  const metaFile = file.replace(/\.ndjson$/, ".meta.json");
  const meta = fs.existsSync(metaFile) ? JSON.parse(fs.readFileSync(metaFile, "utf8")) : {};
  const run = { name, agent: meta.agent ?? name.split("-")[0], version: meta.version ?? "", variant: meta.variant ?? "", error: meta.error, steps: {} };
  runs.push(run);
  const lines = fs.readFileSync(file, "utf8").split("\n");
  const restart = scenario.load ? restartLine(lines) : 0;
  let calls;
  let loadFrameErrors = [];
  let byCall = new Map();
  try {
    let frameErrors;
    ({ calls, frameErrors } = replayCalls(file));
    if (restart) {
      // Frame errors of the replay are the load's; before it, the run's.
      loadFrameErrors = frameErrors.filter((e) => frameErrorLine(e) >= restart);
      frameErrors = frameErrors.filter((e) => frameErrorLine(e) < restart);
      const cut = path.join(fs.mkdtempSync(path.join(path.dirname(opt.acpnormd), "check-")), "before.ndjson");
      fs.writeFileSync(cut, lines.slice(0, restart - 1).join("\n") + "\n");
      const before = replayCalls(cut).calls;
      fs.rmSync(path.dirname(cut), { recursive: true, force: true });
      byCall = loadProblems(before, calls, restart);
    }
    if (frameErrors.length) {
      run.error = `acpnormd could not read frames of this real agent: ${frameErrors.join("; ")}`;
      failed = true;
    }
  } catch (err) {
    run.error = `acpnormd replay failed: ${err.message}`;
    failed = true;
    continue;
  }
  const ts = turns(lines);
  ts.forEach((t, i) => {
    const step = scenario.steps[t.step];
    if (!step) return;
    const end = i + 1 < ts.length ? ts[i + 1].line : restart || Infinity;
    const mine = calls.filter((c) => c.first > t.line && c.first < end);
    const c = mine.find((c) => c.last.command === step.command) ?? mine[mine.length - 1];
    const problems = [...checkCall(c?.last, step.truth, step.command), ...mine.flatMap((m) => m.bad), ...mine.flatMap((m) => byCall.get(m.last.toolCallId) ?? [])];
    const harness = meta.steps?.find((s) => s.id === step.id);
    if (harness?.cancelSent && !step.client?.cancel_after_ms) problems.push(`the harness had to cancel the turn (${harness.cancelSent})`);
    for (const [f, kept] of Object.entries(harness?.files ?? {})) {
      if (!kept) problems.push(`${f} is gone: the command ran although the truth says it must not`);
    }
    const xf = expectationFor(run, step.id);
    let status = problems.length ? (xf ? "xfail" : "FAIL") : xf && !xf.sometimes ? "XPASS" : "pass";
    if (status === "FAIL") failed = true;
    run.steps[step.id] = {
      status,
      problems,
      expected: xf?.reason ?? null,
      calls: mine.length,
      final: c ? { outcome: c.last.outcome, exitCode: c.last.exitCode ?? null, reason: c.last.outcomeReason, revisions: c.revisions, live: c.live } : null,
    };
  });
  if (scenario.load) {
    // The load itself: the agent was started again, answered session/load
    // and replayed something, and acpnormd read the replay without a frame
    // error.
    const problems = [];
    if (meta.load?.skipped) problems.push(`no session/load: ${meta.load.skipped}`);
    else if (!restart) problems.push("the recording has no restart (no agent_proc 2 record)");
    if (meta.load?.error) problems.push(meta.load.error);
    if (restart && meta.load && !meta.load.replayedUpdates) problems.push("the agent replayed no session/update");
    problems.push(...loadFrameErrors);
    const xf = expectationFor(run, "session_load");
    const status = problems.length ? (xf ? "xfail" : "FAIL") : xf && !xf.sometimes ? "XPASS" : "pass";
    if (status === "FAIL") failed = true;
    run.steps.session_load = { status, problems, expected: xf?.reason ?? null, replayedUpdates: meta.load?.replayedUpdates ?? null };
  }
  for (const step of scenario.steps) {
    if (!run.steps[step.id]) {
      const xf = expectationFor(run, step.id);
      run.steps[step.id] = { status: xf ? "xfail" : "FAIL", problems: ["the step never ran (see the meta error)"], expected: xf?.reason ?? null };
      if (!xf) failed = true;
    }
  }
}

// The table: one row per recording, one column per step.
const ids = [...scenario.steps.map((s) => s.id), ...(scenario.load ? ["session_load"] : [])];
const rows = runs.map((r) => [r.name, ...ids.map((id) => r.steps[id]?.status ?? "-")]);
const head = ["run", ...ids];
const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
const line = (cells) => cells.map((c, i) => c.padEnd(widths[i])).join("  ");
console.log(line(head));
for (const r of rows) console.log(line(r));
const notes = [];
for (const r of runs) {
  if (r.error) notes.push(`- ${r.name}: ${r.error}`);
  for (const id of ids) {
    const s = r.steps[id];
    if (!s || s.status === "pass") continue;
    const why = s.status === "XPASS" ? `passes now; remove it from expectations.json (${s.expected})` : s.problems.join("; ") + (s.expected ? ` -- expected: ${s.expected}` : "");
    notes.push(`- ${r.name} ${id} ${s.status}: ${why}`);
  }
}
if (notes.length) console.log("\n" + notes.join("\n"));

if (opt.table) {
  const md = [
    `| ${head.join(" | ")} |`,
    `|${head.map(() => "---").join("|")}|`,
    ...rows.map((r) => `| ${r.join(" | ")} |`),
    "",
    ...notes,
    "",
  ].join("\n");
  fs.writeFileSync(opt.table, md);
}
if (opt.json) fs.writeFileSync(opt.json, JSON.stringify({ scenario: path.basename(opt.scenario), runs }, null, 2) + "\n");
process.exit(failed ? 1 : 0);
