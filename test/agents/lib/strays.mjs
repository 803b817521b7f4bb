// endStrays ends the processes an agent left behind: those still running
// with the session's private HOME in their environment (a HOME made for
// this one session by record.mjs, so nothing else has it), such as Cline's
// detached `cline --cline-hub-daemon`. Each is ended by its pid: SIGTERM,
// then SIGKILL after a grace period. It returns what it found, for the
// sidecar.

import fs from "node:fs";

function strays(home) {
  const want = Buffer.from(`HOME=${home}\0`);
  const found = [];
  let pids;
  try {
    pids = fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d));
  } catch {
    return found; // no /proc: nothing to look at
  }
  for (const d of pids) {
    const pid = Number(d);
    if (pid === process.pid) continue;
    let environ;
    try {
      environ = fs.readFileSync(`/proc/${d}/environ`);
    } catch {
      continue; // gone, or not ours to read
    }
    if (!Buffer.concat([Buffer.from("\0"), environ]).includes(Buffer.concat([Buffer.from("\0"), want]))) continue;
    let cmd = "";
    try {
      cmd = fs.readFileSync(`/proc/${d}/cmdline`, "utf8").split("\0").filter(Boolean).join(" ");
    } catch {}
    found.push({ pid, cmd: cmd.slice(0, 200) });
  }
  return found;
}

export function endStrays(home, graceMs = 2000) {
  const found = strays(home);
  for (const { pid } of found) {
    try {
      process.kill(pid, "SIGTERM");
    } catch {}
  }
  if (found.length) {
    const until = Date.now() + graceMs;
    while (Date.now() < until && strays(home).length) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
    for (const { pid } of strays(home)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {}
    }
  }
  return found;
}
