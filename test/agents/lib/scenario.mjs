// Scenarios are data (scenarios/*.json): a list of steps, each a command and
// the truth about what it does when run. A scenario may instead name steps of
// another one: {"from": "full.json", "steps": ["exit3", ...]}.

import fs from "node:fs";
import path from "node:path";

export function loadScenario(file) {
  const s = JSON.parse(fs.readFileSync(file, "utf8"));
  if (!s.from) return s;
  const base = loadScenario(path.join(path.dirname(file), s.from));
  const steps = s.steps.map((id) => {
    const st = base.steps.find((b) => b.id === id);
    if (!st) throw new Error(`${file}: step ${id} is not in ${s.from}`);
    return st;
  });
  return { ...s, steps };
}
