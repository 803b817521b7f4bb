// renamePrivatePaths renames the recorder's private paths in the text of a
// recording (the work directory, the private HOME and the temporary root
// holding it) to fixed ones, so recordings do not change with the
// temporary directory. The work directory goes first: it lies inside HOME,
// which lies inside the root.
export function renamePrivatePaths(wire, { work, home, root }) {
  const pairs = [[work, "/home/dev/work/proj"], [home, "/home/dev"], [root, "/tmp/harness"]];
  for (const [from, to] of pairs) wire = wire.split(from).join(to);
  // Claude Code names per-project directories after the path, / made -;
  // Grok after the path URL-encoded.
  wire = wire.split(work.replaceAll("/", "-")).join("-home-dev-work-proj");
  for (const [from, to] of pairs) wire = wire.split(encodeURIComponent(from)).join(encodeURIComponent(to));
  // Grok sends a command's output as a JSON array of its bytes
  // (rawOutput.output, output_delta), so a pwd there names the private
  // path in bytes (47,116,109,112,... for "/tmp"): renamed the same way,
  // as whole array elements only (not the "47" that ends "147"). The
  // arrays are compact (no spaces), as Grok writes them. A path split
  // across two arrays (two output_delta frames) is not found.
  for (const [from, to] of pairs) {
    const list = (s) => [...Buffer.from(s, "utf8")].join(",");
    wire = wire.replace(new RegExp(`(?<=[\\[,])${list(from)}(?=[,\\]])`, "g"), list(to));
  }
  // ACP v2 terminal output travels base64-encoded (terminal_update
  // output.data, terminal_output_chunk data): renamed inside it, on the
  // lines that carry one, when the bytes are UTF-8 (else left as sent).
  const renames = [[work.replaceAll("/", "-"), "-home-dev-work-proj"], ...pairs];
  return wire
    .split("\n")
    .map((line) => {
      if (!line.includes('"terminal_update"') && !line.includes('"terminal_output_chunk"')) return line;
      let rec;
      try {
        rec = JSON.parse(line);
      } catch {
        return line;
      }
      const u = rec?.msg?.params?.update;
      const holder = u?.sessionUpdate === "terminal_update" ? u.output : u?.sessionUpdate === "terminal_output_chunk" ? u : null;
      if (typeof holder?.data !== "string") return line;
      const text = Buffer.from(holder.data, "base64").toString("utf8");
      let renamed = text;
      for (const [from, to] of renames) renamed = renamed.split(from).join(to);
      if (renamed === text || Buffer.from(text, "utf8").toString("base64") !== holder.data) return line;
      holder.data = Buffer.from(renamed, "utf8").toString("base64");
      return JSON.stringify(rec);
    })
    .join("\n");
}
