// A scripted language model for the agent harness. It speaks the model APIs
// real agents call -- OpenAI Chat Completions and Responses, Anthropic
// Messages, Gemini generateContent/streamGenerateContent -- on a loopback
// port, with SSE where the agent asks for it.
//
// The script: every harness prompt carries a marker "@@STEP k@@". While no
// tool result has come back since the last marker, the model answers with one
// call of the agent's shell tool running command k of the scenario; once a
// tool result is there, it answers with a short final message. Requests that
// offer no tools (titles, summaries) get a short text; requests that ask for
// JSON get an object built from their schema.
//
// Usage as a module: const m = await startModelServer({ steps, logFile });
// m.url, m.port, m.close(). Standalone: node server.mjs SCENARIO.json [PORT].

import http from "node:http";
import fs from "node:fs";

const MARKER = /@@STEP (\d+)@@/g;

// Shell tools we know, in the order we prefer them, and how each takes its
// arguments. A builder gets the step, a description and the names of the
// tool's parameters (from its schema, when the request gives one): tools of
// one name take different arguments in different agents.
const SHELL_TOOLS = [
  ["bash", (s, d, props) => {
    // Copilot CLI: {command, description, initial_wait (s)}; its wait does
    // not stop the command.
    if (props.has("initial_wait")) return { command: s.command, description: d, ...(s.timeout_ms ? { initial_wait: s.timeout_ms / 1000 } : {}) };
    // pi: {command, timeout (s)}, no description.
    if (props.size && !props.has("description")) return { command: s.command, ...(s.timeout_ms ? { timeout: s.timeout_ms / 1000 } : {}) };
    // OpenCode: {command, description, timeout (ms)}.
    return { command: s.command, description: d, ...(s.timeout_ms ? { timeout: s.timeout_ms } : {}) };
  }],
  // Claude's Bash through the client's terminal (clientCapabilities.terminal).
  // Its timeout (ms) is required: a minute unless the step gives one.
  // claude-code-acp before 0.6 names it timeout_ms (optional there).
  ["mcp__acp__Bash", (s, d, props) => ({ command: s.command, description: d, [props.has("timeout_ms") && !props.has("timeout") ? "timeout_ms" : "timeout"]: s.timeout_ms ?? 60000 })],
  ["Bash", (s, d) => ({ command: s.command, description: d, ...(s.timeout_ms ? { timeout: s.timeout_ms } : {}) })],
  // Gemini CLI: {command, description}; Qwen Code also takes a timeout (ms).
  ["run_shell_command", (s, d, props) => ({ command: s.command, description: d, ...(s.timeout_ms && props.has("timeout") ? { timeout: s.timeout_ms } : {}) })],
  ["shell_command", (s) => ({ command: s.command, ...(s.timeout_ms ? { timeout_ms: s.timeout_ms } : {}) })],
  ["exec_command", (s) => ({ cmd: s.command, ...(s.timeout_ms ? { yield_time_ms: s.timeout_ms } : {}) })],
  ["shell", (s) => ({ command: ["bash", "-lc", s.command], ...(s.timeout_ms ? { timeout_ms: s.timeout_ms } : {}) })],
  // Cline: {commands: [..]}, one command per call here.
  ["run_commands", (s) => ({ commands: [s.command] })],
  // Cline 2: {command, requires_approval, timeout (s) only in its yolo
  // mode}; approval asked for, so that the client answers every command.
  ["execute_command", (s, d, props) => ({ command: s.command, requires_approval: true, ...(s.timeout_ms && props.has("timeout") ? { timeout: s.timeout_ms / 1000 } : {}) })],
  // Grok Build: {command, description, timeout (ms)}.
  ["run_terminal_command", (s, d) => ({ command: s.command, description: d, ...(s.timeout_ms ? { timeout: s.timeout_ms } : {}) })],
  // Factory Droid: {command, timeout (s)?, riskLevel, ...}; the other
  // required fields are filled from the schema.
  ["Execute", (s, d, props) => ({ command: s.command, ...(props.has("summary") ? { summary: d } : {}), ...(s.timeout_ms && props.has("timeout") ? { timeout: s.timeout_ms / 1000 } : {}), ...(props.has("riskLevel") ? { riskLevel: "low", riskLevelReason: "a harness step" } : {}) })],
];

// fillRequired adds a schema-valid value for each required parameter the
// builder did not set.
function fillRequired(args, schema) {
  for (const k of schema?.required ?? []) {
    if (!(k in args) && schema.properties?.[k]) args[k] = jsonFor(schema.properties[k]);
  }
  return args;
}

export function describeStep(k, step) {
  return `Run step ${k} (${step.id})`;
}

// decide looks at a conversation, reduced to [{kind: "text"|"tool_result",
// text}], and the names of the offered tools, and says what to answer.
export function decide(steps, events, toolNames, schemas = {}) {
  let k = -1;
  let at = -1;
  events.forEach((e, i) => {
    if (e.kind !== "text") return;
    for (const m of e.text.matchAll(MARKER)) {
      k = Number(m[1]);
      at = i;
    }
  });
  if (k < 0 || k >= steps.length) {
    return { kind: "text", text: "Nothing to run." };
  }
  const step = steps[k];
  const resultSince = events.slice(at + 1).some((e) => e.kind === "tool_result");
  if (resultSince) {
    const text = `Step ${k} (${step.id}) finished; I ran the command and saw its result.`;
    // Cline 2 (execute_command) takes an answer without a tool call for a
    // mistake and asks again: it ends a task only with attempt_completion.
    if (toolNames.includes("execute_command") && toolNames.includes("attempt_completion")) {
      return { kind: "tool", step: k, name: "attempt_completion", args: { result: text } };
    }
    return { kind: "text", text };
  }
  const tool = SHELL_TOOLS.find(([name]) => toolNames.includes(name));
  if (!tool) {
    return { kind: "text", text: `No shell tool offered for step ${k}.` };
  }
  const schema = schemas[tool[0]];
  const props = new Set(Object.keys(schema?.properties ?? {}));
  return { kind: "tool", step: k, name: tool[0], args: fillRequired(tool[1](step, describeStep(k, step), props), schema) };
}

let callSeq = 0;
function callId(prefix, d) {
  callSeq++;
  const id = d.step !== undefined ? `${prefix}_${d.stepId}_${callSeq}` : `${prefix}_${callSeq}`;
  return id.replace(/[^A-Za-z0-9_-]/g, "_");
}

// ---- request readers: each turns an API request into events + tool names.

function textOf(content) {
  if (content == null) return "";
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((c) => (typeof c === "string" ? c : c.text ?? c.input_text ?? "")).join("\n");
  return String(content.text ?? "");
}

function readChat(body) {
  const events = [];
  for (const m of body.messages ?? []) {
    if (m.role === "tool") events.push({ kind: "tool_result" });
    else if (m.role === "user") events.push({ kind: "text", text: textOf(m.content) });
  }
  const tools = (body.tools ?? []).map((t) => t.function?.name ?? t.name).filter(Boolean);
  const schemas = Object.fromEntries((body.tools ?? []).map((t) => [t.function?.name ?? t.name, t.function?.parameters ?? t.parameters]));
  return { events, tools, schemas };
}

function readResponses(body) {
  const events = [];
  const input = typeof body.input === "string" ? [{ role: "user", content: body.input }] : body.input ?? [];
  for (const it of input) {
    if (it.type === "function_call_output" || it.type === "custom_tool_call_output" || it.type === "local_shell_call_output") {
      events.push({ kind: "tool_result" });
    } else if ((it.type === "message" || it.type === undefined) && it.role === "user") {
      events.push({ kind: "text", text: textOf(it.content) });
    }
  }
  const tools = (body.tools ?? []).map((t) => t.name ?? t.type).filter(Boolean);
  const schemas = Object.fromEntries((body.tools ?? []).map((t) => [t.name ?? t.type, t.parameters]));
  return { events, tools, schemas };
}

function readAnthropic(body) {
  const events = [];
  for (const m of body.messages ?? []) {
    if (m.role !== "user") continue;
    const parts = typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content ?? [];
    for (const p of parts) {
      if (p.type === "tool_result") events.push({ kind: "tool_result" });
      else if (p.type === "text") events.push({ kind: "text", text: p.text ?? "" });
    }
  }
  const tools = (body.tools ?? []).map((t) => t.name).filter(Boolean);
  const schemas = Object.fromEntries((body.tools ?? []).map((t) => [t.name, t.input_schema]));
  return { events, tools, schemas };
}

function readGemini(body) {
  const events = [];
  for (const c of body.contents ?? []) {
    if (c.role !== "user") continue;
    for (const p of c.parts ?? []) {
      if (p.functionResponse) events.push({ kind: "tool_result" });
      else if (typeof p.text === "string") events.push({ kind: "text", text: p.text });
    }
  }
  const tools = [];
  for (const t of body.tools ?? []) for (const f of t.functionDeclarations ?? []) tools.push(f.name);
  return { events, tools };
}

// jsonFor builds a value that satisfies a (JSON or Gemini) schema well
// enough for an agent's side question ("who speaks next?": the user).
function jsonFor(schema) {
  if (!schema) return {};
  const type = String(schema.type ?? "").toLowerCase();
  if (schema.enum) return schema.enum.includes("user") ? "user" : schema.enum[0];
  // A choice of types (pi 0.86's required timeout: a number or null): null
  // where it is one, as "not given"; else the first.
  const alts = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(alts) && alts.length) {
    return alts.some((a) => String(a?.type ?? "").toLowerCase() === "null") ? null : jsonFor(alts[0]);
  }
  if (type === "object" || schema.properties) {
    const o = {};
    for (const [k, v] of Object.entries(schema.properties ?? {})) o[k] = jsonFor(v);
    return o;
  }
  if (type === "array") return [];
  if (type === "boolean") return false;
  if (type === "number" || type === "integer") return schema.minimum ?? 1;
  return "ok";
}

// ---- response writers.

function sse(res) {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
}

function json(res, obj, status = 200) {
  const b = JSON.stringify(obj);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(b) });
  res.end(b);
}

const usageChat = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };

function answerChat(body, d, res) {
  const id = `chatcmpl-${++callSeq}`;
  const created = Math.floor(Date.now() / 1000);
  const model = body.model ?? "fake-model";
  const toolCall = d.kind === "tool" ? { id: callId("call", d), type: "function", function: { name: d.name, arguments: JSON.stringify(d.args) } } : null;
  const finish = toolCall ? "tool_calls" : "stop";
  if (!body.stream) {
    const message = toolCall ? { role: "assistant", content: null, tool_calls: [toolCall] } : { role: "assistant", content: d.text };
    return json(res, { id, object: "chat.completion", created, model, choices: [{ index: 0, message, finish_reason: finish }], usage: usageChat });
  }
  sse(res);
  const chunk = (delta, finish_reason = null, extra = {}) =>
    res.write(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta, finish_reason }], ...extra })}\n\n`);
  if (toolCall) {
    chunk({ role: "assistant", content: null, tool_calls: [{ index: 0, ...toolCall }] });
  } else {
    chunk({ role: "assistant", content: "" });
    chunk({ content: d.text });
  }
  chunk({}, finish, { usage: usageChat });
  res.end("data: [DONE]\n\n");
}

function answerResponses(body, d, res) {
  const respId = `resp_${++callSeq}`;
  const model = body.model ?? "fake-model";
  let item;
  if (d.kind === "tool") {
    const cid = callId("call", d);
    item = { type: "function_call", id: `fc_${cid}`, call_id: cid, name: d.name, arguments: JSON.stringify(d.args), status: "completed" };
  } else {
    item = { type: "message", id: `msg_${callSeq}`, role: "assistant", status: "completed", content: [{ type: "output_text", text: d.text, annotations: [] }] };
  }
  const usage = { input_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens: 5, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 15 };
  const done = { id: respId, object: "response", created_at: Math.floor(Date.now() / 1000), status: "completed", model, output: [item], usage };
  if (!body.stream) return json(res, done);
  sse(res);
  let seq = 0;
  const ev = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`);
  ev("response.created", { response: { ...done, status: "in_progress", output: [] } });
  ev("response.in_progress", { response: { ...done, status: "in_progress", output: [] } });
  if (item.type === "message") {
    ev("response.output_item.added", { output_index: 0, item: { ...item, status: "in_progress", content: [] } });
    ev("response.content_part.added", { output_index: 0, item_id: item.id, content_index: 0, part: { type: "output_text", text: "", annotations: [] } });
    ev("response.output_text.delta", { output_index: 0, item_id: item.id, content_index: 0, delta: d.text });
    ev("response.output_text.done", { output_index: 0, item_id: item.id, content_index: 0, text: d.text });
    ev("response.content_part.done", { output_index: 0, item_id: item.id, content_index: 0, part: item.content[0] });
  } else {
    ev("response.output_item.added", { output_index: 0, item: { ...item, status: "in_progress", arguments: "" } });
    ev("response.function_call_arguments.delta", { output_index: 0, item_id: item.id, delta: item.arguments });
    ev("response.function_call_arguments.done", { output_index: 0, item_id: item.id, arguments: item.arguments });
  }
  ev("response.output_item.done", { output_index: 0, item });
  ev("response.completed", { response: done });
  res.end();
}

function answerAnthropic(body, d, res) {
  const msgId = `msg_${++callSeq}`;
  const model = body.model ?? "claude-fake";
  let block;
  if (d.kind === "tool") block = { type: "tool_use", id: callId("toolu", d), name: d.name, input: d.args };
  else block = { type: "text", text: d.text };
  const stop = block.type === "tool_use" ? "tool_use" : "end_turn";
  const usage = { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  if (!body.stream) {
    return json(res, { id: msgId, type: "message", role: "assistant", model, content: [block], stop_reason: stop, stop_sequence: null, usage });
  }
  sse(res);
  const ev = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  ev("message_start", { message: { id: msgId, type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } } });
  if (block.type === "tool_use") {
    ev("content_block_start", { index: 0, content_block: { type: "tool_use", id: block.id, name: block.name, input: {} } });
    ev("content_block_delta", { index: 0, delta: { type: "input_json_delta", partial_json: JSON.stringify(block.input) } });
  } else {
    ev("content_block_start", { index: 0, content_block: { type: "text", text: "" } });
    ev("content_block_delta", { index: 0, delta: { type: "text_delta", text: block.text } });
  }
  ev("content_block_stop", { index: 0 });
  ev("message_delta", { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 5 } });
  ev("message_stop", {});
  res.end();
}

function answerGemini(body, d, res, stream) {
  const cfg = body.generationConfig ?? {};
  let parts;
  if (cfg.responseMimeType === "application/json" || cfg.responseSchema || cfg.responseJsonSchema) {
    parts = [{ text: JSON.stringify(jsonFor(cfg.responseJsonSchema ?? cfg.responseSchema ?? { type: "object" })) }];
  } else if (d.kind === "tool") {
    parts = [{ functionCall: { name: d.name, args: d.args } }];
  } else {
    parts = [{ text: d.text }];
  }
  const out = {
    candidates: [{ content: { role: "model", parts }, finishReason: "STOP", index: 0 }],
    usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 },
    modelVersion: "gemini-fake",
  };
  if (!stream) return json(res, out);
  sse(res);
  res.write(`data: ${JSON.stringify(out)}\n\n`);
  res.end();
}

// ---- the server.

export function startModelServer({ steps, logFile, host = "127.0.0.1", port = 0 }) {
  const log = (entry) => {
    if (logFile) fs.appendFileSync(logFile, JSON.stringify({ t: Date.now(), ...entry }) + "\n");
  };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      let body = {};
      try {
        body = raw ? JSON.parse(raw) : {};
      } catch {
        log({ method: req.method, url: req.url, error: "body is not JSON" });
        return json(res, { error: { message: "body is not JSON" } }, 400);
      }
      const url = new URL(req.url, "http://x");
      const p = url.pathname;
      let api, read;
      if (req.method === "POST" && p.endsWith("/chat/completions")) [api, read] = ["chat", readChat];
      else if (req.method === "POST" && p.endsWith("/responses")) [api, read] = ["responses", readResponses];
      else if (req.method === "POST" && p.endsWith("/messages/count_tokens")) {
        log({ method: req.method, url: req.url, api: "anthropic-count" });
        return json(res, { input_tokens: 10 });
      } else if (req.method === "POST" && p.endsWith("/messages")) [api, read] = ["anthropic", readAnthropic];
      else if (req.method === "POST" && /:(stream)?[gG]enerateContent$/.test(p)) [api, read] = ["gemini", readGemini];
      else if (req.method === "POST" && p.endsWith(":countTokens")) {
        log({ method: req.method, url: req.url, api: "gemini-count" });
        return json(res, { totalTokens: 10 });
      } else if (req.method === "GET" && p.endsWith("/models")) {
        log({ method: req.method, url: req.url, api: "models" });
        return json(res, { object: "list", data: [{ id: "fake-model", object: "model", owned_by: "harness" }], models: [] });
      } else {
        log({ method: req.method, url: req.url, api: "unknown", body: raw.slice(0, 2000) });
        return json(res, { error: { message: `the scripted model does not serve ${req.method} ${p}` } }, 404);
      }
      const { events, tools, schemas } = read(body);
      const d = decide(steps, events, tools, schemas);
      if (d.kind === "tool") d.stepId = steps[d.step].id;
      log({ method: req.method, url: req.url, api, stream: !!body.stream, tools, answer: d, ...(d.kind === "tool" ? { toolSchema: schemas?.[d.name] ?? null } : {}) });
      if (api === "chat") answerChat(body, d, res);
      else if (api === "responses") answerResponses(body, d, res);
      else if (api === "anthropic") answerAnthropic(body, d, res);
      else answerGemini(body, d, res, p.endsWith(":streamGenerateContent"));
    });
  });
  return new Promise((resolve, reject) => {
    server.on("error", reject);
    server.listen(port, host, () => {
      const a = server.address();
      resolve({ port: a.port, url: `http://${host}:${a.port}`, close: () => new Promise((r) => { server.closeAllConnections?.(); server.close(() => r()); }) });
    });
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [file, port] = process.argv.slice(2);
  if (!file) {
    console.error("usage: node server.mjs SCENARIO.json [PORT]");
    process.exit(2);
  }
  const { steps } = JSON.parse(fs.readFileSync(file, "utf8"));
  const m = await startModelServer({ steps, port: Number(port ?? 0), logFile: "/dev/stderr" });
  console.log(m.url);
}
