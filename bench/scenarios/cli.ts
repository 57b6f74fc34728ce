import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { ROOT } from "../lib/child.js";
import { freshSqliteUrl } from "../lib/db.js";
import { pick } from "../lib/mode.js";
import { progress } from "../lib/progress.js";

interface Timing {
  wall_ms: number;
  cpu_ms: number | null;
}

export interface CliResult {
  params: { quick: boolean; runs: number; build: string; database: string };
  commands: Record<string, Timing>;
  /** The slowest command's median wall time: the figure the target (<= 300 ms) reads. */
  slowest_wall_ms: number;
  slowest_cpu_ms: number | null;
  /** `node -e ""` measured the same way: the machine's floor for any CLI call. */
  node_floor: Timing;
}

const COMMANDS: Record<string, string[]> = {
  sessions_list: ["sessions", "list", "--json"],
  pairing_list: ["pairing", "list", "--json"],
  migrate_dry_run: ["migrate", "--dry-run", "--json"],
  help: ["--help"],
};

/**
 * Each read-only CLI command on the compiled build (what `npx switchboard` runs; the startup
 * scenario has just rebuilt dist/), against a migrated SQLite database: median wall and CPU
 * time of `runs` calls, by scripts/cli-latency.mjs.
 */
export async function runCli(quick: boolean): Promise<CliResult> {
  const runs = pick(quick, 11, 5, 3);
  if (!fs.existsSync(path.join(ROOT, "dist/app/cli.js")))
    execFileSync(process.execPath, [path.join(ROOT, "scripts/build.mjs")], { cwd: ROOT, stdio: "ignore" });
  const url = freshSqliteUrl();
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: url };
  delete env.SWITCHBOARD_FROM_SOURCE;
  execFileSync(process.execPath, ["bin/switchboard.mjs", "migrate", "--json"], { cwd: ROOT, env, stdio: "ignore" });
  const commands: Record<string, Timing> = {};
  let floor: Timing = { wall_ms: Number.NaN, cpu_ms: null };
  for (const [name, argv] of Object.entries(COMMANDS)) {
    progress(`cli: ${name}`);
    const out = execFileSync(process.execPath, ["scripts/cli-latency.mjs", String(runs), process.execPath, "bin/switchboard.mjs", ...argv], {
      cwd: ROOT,
      env,
      encoding: "utf8",
    });
    const r = JSON.parse(out) as { wallMs: number; cpuMs: number | null; nodeFloor: { wallMs: number; cpuMs: number | null } };
    commands[name] = { wall_ms: r.wallMs, cpu_ms: r.cpuMs };
    floor = { wall_ms: r.nodeFloor.wallMs, cpu_ms: r.nodeFloor.cpuMs };
  }
  const all = Object.values(commands);
  const cpus = all.map((t) => t.cpu_ms).filter((c): c is number => c !== null);
  return {
    params: { quick, runs, build: "node bin/switchboard.mjs <command>, compiled build (dist/app)", database: "SQLite, migrated" },
    commands,
    slowest_wall_ms: Math.max(...all.map((t) => t.wall_ms)),
    slowest_cpu_ms: cpus.length ? Math.max(...cpus) : null,
    node_floor: floor,
  };
}
