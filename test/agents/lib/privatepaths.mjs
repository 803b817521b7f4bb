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
  return wire;
}
