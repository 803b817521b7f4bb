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

// writeHomeFiles writes the files a scenario puts in the private HOME
// before the agent starts (home_files: {path under HOME: text}), for state
// an agent reads only when it starts (Qwen's memory index). A path that
// leaves HOME is refused.
export function writeHomeFiles(home, scenario) {
  for (const [f, text] of Object.entries(scenario.home_files ?? {})) {
    const file = path.resolve(home, f);
    const rel = path.relative(home, file);
    if (rel === "" || rel.startsWith("..") || path.isAbsolute(rel)) throw new Error(`home_files: ${f} is not under HOME`);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, text);
  }
}
