// The result tables the docs show (test/agents/README.md,
// docs/development.md) are copies of what `run.sh --replay` prints. staleCells
// holds each copy to the replay of this tree, so a dialect change or a new
// expectation that moves a cell cannot leave the docs saying otherwise.
//
// A table is a Markdown table whose first header cell starts with "run".
// Each of its rows names a run (a committed recording) and gives a status
// per step. A table that shows what an older tree did, on purpose, is
// preceded by the line `<!-- doctables: as recorded -->` and is not checked.

// asRecorded marks a table that is not held to the replay.
export const asRecorded = "<!-- doctables: as recorded -->";

// cells splits one Markdown table row into its trimmed cells.
function cells(line) {
  return line.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim());
}

// staleCells returns a message for each cell of the checked tables of md
// that differs from results (a Map of run name to a Map of step to
// status), and for each row naming a run results does not have. doc names
// md in the messages.
export function staleCells(doc, md, results) {
  const out = [];
  const lines = md.split("\n");
  let head = null; // the header of the table being read, or null
  let skip = false;
  let marked = false; // the last non-empty line was the asRecorded mark
  lines.forEach((line, i) => {
    const at = `${doc}:${i + 1}`;
    if (!line.startsWith("|")) {
      head = null;
      if (line.trim() !== "") marked = line.trim() === asRecorded;
      return;
    }
    if (head === null) {
      const h = cells(line);
      head = h;
      skip = marked || !/^run\b/.test(h[0]);
      marked = false;
      return;
    }
    if (skip || /^\|\s*-/.test(line)) return;
    const row = cells(line);
    const run = results.get(row[0]);
    if (!run) {
      out.push(`${at}: ${row[0]}: no such run in the replay`);
      return;
    }
    head.slice(1).forEach((step, j) => {
      const want = run.get(step) ?? "-";
      if (row[j + 1] !== want) out.push(`${at}: ${row[0]} ${step}: the doc says ${row[j + 1]}, the replay ${want}`);
    });
  });
  return out;
}

// resultsOf reads check.mjs's --json files into staleCells's Map.
export function resultsOf(jsons) {
  const m = new Map();
  for (const j of jsons) {
    for (const r of j.runs) m.set(r.name, new Map(Object.entries(r.steps).map(([id, s]) => [id, s.status])));
  }
  return m;
}

// node lib/doctables.mjs RESULTS.json... -- DOC.md...: exit 1 with a line
// per stale cell (run.sh --replay runs it after replaying everything).
if (process.argv[1] && new URL(import.meta.url).pathname === (await import("node:fs")).realpathSync(process.argv[1])) {
  const fs = await import("node:fs");
  const cut = process.argv.indexOf("--");
  const jsons = process.argv.slice(2, cut).map((f) => JSON.parse(fs.readFileSync(f, "utf8")));
  const results = resultsOf(jsons);
  const stale = process.argv.slice(cut + 1).flatMap((d) => staleCells(d, fs.readFileSync(d, "utf8"), results));
  for (const s of stale) console.log(s);
  if (stale.length) {
    console.log(`doctables: ${stale.length} cells of the docs' result tables differ from this replay; copy the replay's (out/results*.md), or mark a table kept on purpose with ${asRecorded}`);
    process.exit(1);
  }
}
