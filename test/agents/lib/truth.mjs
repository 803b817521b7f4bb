// What acpnorm must report for a step, given the truth of what its command
// does (scenarios/*.json), and the check of one final ShellExec (protojson)
// against it.

// expect turns a step's truth into what acpnorm must report.
export function expect(truth) {
  if (truth.rejected || truth.cancelled) return { outcome: "CANCELLED", exit: "absent-or-nonzero" };
  if (truth.timed_out) return { outcome: "FAILED", exit: "absent-or-nonzero" };
  if (truth.signal) return { outcome: "FAILED", exit: [null, 128 + truth.signal] };
  return { outcome: truth.exit === 0 ? "SUCCEEDED" : "FAILED", exit: [truth.exit] };
}

// containsWhole says whether text holds s where s is not part of a longer
// word: "tick1" is not found in "tick10", though "tick1" in "tick1\n" is.
export function containsWhole(text, s) {
  const word = /[A-Za-z0-9_]/;
  for (let i = text.indexOf(s); i >= 0; i = text.indexOf(s, i + 1)) {
    const before = i > 0 ? text[i - 1] : "";
    const after = text[i + s.length] ?? "";
    if (!(word.test(s[0] ?? "") && word.test(before)) && !(word.test(s[s.length - 1] ?? "") && word.test(after))) return true;
  }
  return false;
}

// checkCall returns the problems of one final ShellExec against the truth.
export function checkCall(x, truth, command) {
  const bad = [];
  if (!x) return ["no shell call in this turn"];
  if (!x.command) bad.push("no command");
  else if (x.command !== command) bad.push(`command ${JSON.stringify(x.command)}, want ${JSON.stringify(command)}`);
  const want = expect(truth);
  const state = (x.state ?? "").replace("SHELL_STATE_", "");
  const outcome = (x.outcome ?? "").replace("SHELL_OUTCOME_", "");
  const exit = x.exitCode ?? null;
  if (state !== "ENDED") bad.push(`state ${state}, want ENDED`);
  if (outcome !== want.outcome) bad.push(`outcome ${outcome || "none"} (${x.outcomeReason ?? "no reason"}), want ${want.outcome}`);
  if (want.exit === "absent-or-nonzero") {
    if (exit === 0) bad.push("exit 0, want absent or nonzero");
  } else if (!want.exit.includes(exit)) {
    bad.push(`exit ${exit ?? "absent"}, want ${want.exit.map((e) => e ?? "absent").join(" or ")}`);
  }
  const texts = [x.output, x.stdout, x.stderr].filter(Boolean);
  const all = texts.map((t) => t.text ?? "").join("\n");
  for (const s of truth.output_contains ?? []) if (!containsWhole(all, s)) bad.push(`output lacks ${JSON.stringify(s)}`);
  for (const s of truth.output_lacks ?? []) if (all.includes(s)) bad.push(`output has ${JSON.stringify(s)}`);
  if (truth.lines) {
    const allowed = new Set(truth.lines);
    const extra = [...new Set(all.split(/\r?\n/).filter((l) => l.trim() !== "" && !allowed.has(l)))];
    if (extra.length) bad.push(`output has lines that are not the command's output: ${extra.slice(0, 3).map((l) => JSON.stringify(l.length > 80 ? l.slice(0, 80) + "..." : l)).join(", ")}${extra.length > 3 ? ` (+${extra.length - 3} more)` : ""}`);
  }
  if (truth.over_limit && !texts.some((t) => t.truncated)) bad.push("output over the limit not marked truncated");
  return bad;
}

function fold(held, next) {
  if (!next) return held;
  if (next.mode === "TEXT_MODE_APPEND" && held) return { ...next, text: (held.text ?? "") + (next.text ?? ""), mode: "TEXT_MODE_REPLACE" };
  return { ...next, mode: "TEXT_MODE_REPLACE" };
}

// foldRevisions applies ShellExec revisions (protojson objects, in order)
// as a client does, per tool call, in the order the calls first appear:
// {first: sequence of the first revision, seqs: the sequence of each
// revision, revisions, live: running
// revisions with text, last: the folded final ShellExec, bad: what broke a
// rule every client relies on -- revisions 1, 2, 3 with no gap, nothing
// after ENDED, whole texts on ENDED}.
export function foldRevisions(execs) {
  const calls = new Map();
  for (const x of execs) {
    let c = calls.get(x.toolCallId);
    if (!c) {
      c = { first: Number(x.sequence), revisions: 0, live: 0, last: {}, bad: [], seqs: [] };
      calls.set(x.toolCallId, c);
    }
    c.revisions++;
    c.seqs.push(Number(x.sequence));
    if (x.revision !== c.revisions) c.bad.push(`revision ${x.revision} where ${c.revisions} was due`);
    if (c.last.state === "SHELL_STATE_ENDED" && x.state !== "SHELL_STATE_ENDED") c.bad.push(`revision ${x.revision} is ${x.state} after ENDED`);
    if (x.state === "SHELL_STATE_ENDED") {
      for (const k of ["output", "stdout", "stderr"]) if (x[k] && x[k].mode !== "TEXT_MODE_REPLACE") c.bad.push(`ENDED revision ${x.revision} has an ${x[k].mode} ${k}`);
    }
    if (x.state === "SHELL_STATE_RUNNING" && (x.output || x.stdout || x.stderr)) c.live++;
    const prev = c.last;
    c.last = { ...x, output: fold(prev.output, x.output), stdout: fold(prev.stdout, x.stdout), stderr: fold(prev.stderr, x.stderr) };
  }
  return [...calls.values()];
}

// finalOf is what a client keeps of a call: the fields a replay must not
// change.
export function finalOf(x) {
  const text = (t) => (t ? { text: t.text ?? "", truncated: !!t.truncated } : null);
  return { command: x.command ?? "", state: x.state ?? "", outcome: x.outcome ?? "", exitCode: x.exitCode ?? null, signal: x.signal ?? null, output: text(x.output), stdout: text(x.stdout), stderr: text(x.stderr) };
}

// loadProblems holds each call's final after a session/load replay against
// its final before it (the recording cut before the restart). A replay may
// fill in what was unknown (no exit code, outcome UNKNOWN, no output: Droid
// replays results it never sent live), and the step's truth still judges
// what it filled in; it must not change anything that was known. A call
// that had ended must get no revision from a replay that changes nothing.
export function loadProblems(before, after, restart) {
  const out = new Map();
  const unknown = (k, v) => v === null || v === "" || (k === "outcome" && /UNKNOWN/.test(v));
  const show = (v) => (v && typeof v === "object" ? JSON.stringify(v).slice(0, 120) : JSON.stringify(v));
  for (const b of before) {
    const id = b.last.toolCallId;
    const a = after.find((c) => c.last.toolCallId === id);
    const bad = [];
    if (!a) continue;
    const fb = finalOf(b.last);
    const fa = finalOf(a.last);
    let changed = false;
    for (const k of Object.keys(fb)) {
      if (JSON.stringify(fb[k]) === JSON.stringify(fa[k])) continue;
      changed = true;
      if (!unknown(k, fb[k])) bad.push(`after session/load ${k} is ${show(fa[k])}, before it ${show(fb[k])}`);
    }
    const later = a.seqs.filter((q) => q > restart).length;
    if (later && !changed && b.last.state === "SHELL_STATE_ENDED") bad.push(`${later} new revision(s) after session/load for a call that had ended, changing nothing`);
    out.set(id, bad);
  }
  return out;
}
