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
  return wire;
}
