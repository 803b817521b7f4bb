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
  for (const s of truth.output_contains ?? []) if (!all.includes(s)) bad.push(`output lacks ${JSON.stringify(s)}`);
  for (const s of truth.output_lacks ?? []) if (all.includes(s)) bad.push(`output has ${JSON.stringify(s)}`);
  if (truth.over_limit && !texts.some((t) => t.truncated)) bad.push("output over the limit not marked truncated");
  return bad;
}
