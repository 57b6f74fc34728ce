/**
 * `npm run bench:compare -- --base=<rev> [--rounds=3] [--only=core_sqlite] [--quick]`:
 * one scenario of `npm run bench`, run on this checkout and on an earlier
 * revision side by side in one run, alternating (base, this, base, this...)
 * so the machine's noise falls on both alike. Prints one JSON document with
 * each side's rates, their medians and the ratio this/base.
 *
 * The base is checked out as a detached git worktree in the system's temp
 * folder, sharing this checkout's node_modules (a symlink) and generating its
 * own Prisma clients (its schema may differ); it is removed afterwards.
 */
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { median, r3 } from "./lib/stats.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

interface Options {
  base: string;
  rounds: number;
  only: string;
  quick: boolean;
}

function options(argv: string[]): Options {
  const value = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const base = value("base");
  if (!base) throw new Error("bench:compare needs --base=<rev>: the git revision to compare this checkout with (e.g. --base=main~3).");
  const rounds = Number(value("rounds") ?? 3);
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`--rounds must be a whole number of at least 1; got ${value("rounds")}.`);
  return { base, rounds, only: value("only") ?? "core_sqlite", quick: argv.includes("--quick") };
}

/** A detached worktree of `rev` sharing this checkout's node_modules, with its own generated Prisma clients. */
function checkout(rev: string): string {
  const sha = execFileSync("git", ["rev-parse", "--verify", `${rev}^{commit}`], { cwd: root, encoding: "utf8" }).trim();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `switchboard-base-${sha.slice(0, 8)}-`));
  execFileSync("git", ["worktree", "add", "--detach", "--force", dir, sha], { cwd: root, stdio: "ignore" });
  fs.symlinkSync(path.join(root, "node_modules"), path.join(dir, "node_modules"), "dir");
  const gen = spawnSync(process.execPath, [path.join(dir, "scripts", "generate.mjs")], { cwd: dir, stdio: ["ignore", "ignore", "inherit"] });
  if (gen.status !== 0) throw new Error(`generating the Prisma clients of ${rev} failed (exit ${gen.status})`);
  return dir;
}

function remove(dir: string): void {
  spawnSync("git", ["worktree", "remove", "--force", dir], { cwd: root, stdio: "ignore" });
  fs.rmSync(dir, { recursive: true, force: true });
}

type Figures = { msgs_per_s?: number; cpu_ms_per_msg?: number };

/**
 * One `npm run bench -- --only=<scenario>` in `dir`: the scenario's msgs_per_s and cpu_ms_per_msg. For `peers`,
 * Switchboard's with the echo agent (its own process's CPU), the other peers left out (BENCH_PEERS_SYSTEMS; a base
 * older than that variable runs them all, OpenClaw excepted) but the plain grammY bot, whose figure is beside it.
 */
function runOnce(dir: string, o: Options): { msgs_per_s: number; cpu_ms_per_msg: number | null } {
  const tsx = path.join(root, "node_modules", "tsx", "dist", "cli.mjs");
  const args = [tsx, path.join(dir, "bench", "run.ts"), `--only=${o.only}`, ...(o.quick ? ["--quick"] : [])];
  const env = o.only === "peers" ? { ...process.env, BENCH_PEERS_SYSTEMS: "grammy,switchboard_echo", BENCH_PEERS_OPENCLAW: "0" } : process.env;
  const r = spawnSync(process.execPath, args, { cwd: dir, env, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"], maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`the bench in ${dir} exited ${r.status}`);
  const doc = JSON.parse(r.stdout) as { scenarios: Record<string, Figures & { systems?: Record<string, Figures> }> };
  const s = o.only === "peers" ? doc.scenarios.peers?.systems?.switchboard_echo : doc.scenarios[o.only];
  if (o.only === "peers") {
    const g = doc.scenarios.peers?.systems?.grammy;
    process.stderr.write(`  ${dir}: Switchboard ${s?.cpu_ms_per_msg} CPU ms/msg, the plain grammY bot ${g?.cpu_ms_per_msg}\n`);
  }
  if (typeof s?.msgs_per_s !== "number") throw new Error(`the bench in ${dir} reported no msgs_per_s for ${o.only}`);
  return { msgs_per_s: s.msgs_per_s, cpu_ms_per_msg: s.cpu_ms_per_msg ?? null };
}

export function compare(o: Options): Record<string, unknown> {
  const baseDir = checkout(o.base);
  try {
    const base: number[] = [];
    const head: number[] = [];
    // CPU per message moves less than the rate when other work shares the cores: both are reported.
    const baseCpu: number[] = [];
    const headCpu: number[] = [];
    const load: number[] = [];
    for (let i = 0; i < o.rounds; i++) {
      load.push(os.loadavg()[0]!);
      const b = runOnce(baseDir, o);
      const h = runOnce(root, o);
      base.push(b.msgs_per_s);
      head.push(h.msgs_per_s);
      if (b.cpu_ms_per_msg !== null) baseCpu.push(b.cpu_ms_per_msg);
      if (h.cpu_ms_per_msg !== null) headCpu.push(h.cpu_ms_per_msg);
      process.stderr.write(`round ${i + 1}/${o.rounds}: base ${b.msgs_per_s} msgs/s, this ${h.msgs_per_s} msgs/s\n`);
    }
    const mb = median(base);
    const mh = median(head);
    const cpu =
      baseCpu.length && headCpu.length
        ? {
            base_cpu_ms_per_msg: baseCpu,
            this_cpu_ms_per_msg: headCpu,
            cpu_ratio_this_to_base: r3(median(headCpu) / median(baseCpu)),
            median_round_cpu_ratio: r3(median(headCpu.map((h, i) => h / (baseCpu[i] ?? h)))),
          }
        : {};
    return {
      scenario: o.only,
      quick: o.quick,
      base: o.base,
      rounds: o.rounds,
      base_msgs_per_s: base,
      this_msgs_per_s: head,
      base_median: mb,
      this_median: mh,
      ratio_this_to_base: r3(mh / mb),
      // Each round runs the two back to back, so the machine's noise of the moment falls on both: the median
      // of the rounds' own ratios is steadier than the ratio of the two medians when the load moves.
      median_round_ratio: r3(median(head.map((h, i) => h / base[i]!))),
      ...cpu,
      load_1min_at_each_round: load.map(r3),
      cores: os.cpus().length,
    };
  } finally {
    remove(baseDir);
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === fs.realpathSync(process.argv[1])) {
  process.stdout.write(`${JSON.stringify(compare(options(process.argv.slice(2))), null, 2)}\n`);
}
