#!/usr/bin/env node
// Median wall and CPU time of one CLI call, e.g.
//   node scripts/cli-latency.mjs 11 node bin/switchboard.mjs sessions list --json
// and of a bare `node -e ""` for comparison (the machine's floor). CPU time
// (user + sys of the child) is what contention on a shared machine disturbs least.
import { spawnSync } from "node:child_process";

const [n, ...cmd] = process.argv.slice(2);
const runs = Number(n) || 11;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function measure(argv) {
  const wall = [];
  const cpu = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    // /usr/bin/time reports the child's own CPU; without it, only wall time is known.
    const r = spawnSync("/usr/bin/time", ["-f", "%U %S", ...argv], { encoding: "utf8" });
    wall.push(performance.now() - t0);
    const m = /([\d.]+) ([\d.]+)\s*$/.exec(r.stderr ?? "");
    if (m) cpu.push((Number(m[1]) + Number(m[2])) * 1000);
  }
  return { wallMs: Math.round(median(wall)), cpuMs: cpu.length ? Math.round(median(cpu)) : null };
}

const floor = measure([process.execPath, "-e", ""]);
const target = measure(cmd.length ? cmd : [process.execPath, "bin/switchboard.mjs", "sessions", "list", "--json"]);
console.log(JSON.stringify({ runs, command: cmd.join(" "), ...target, nodeFloor: floor }));
