import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { SERVE_ENV, SERVE_NODE_FLAGS } from "../../scripts/serve-process.mjs";
import { freePort } from "../../tools/pg-cluster.js";
import { cpuMsOf, ROOT, rssOf, stopChild } from "../lib/child.js";
import { freshSqliteUrl } from "../lib/db.js";
import type { PlatformDriver } from "../lib/platforms.js";
import { pick } from "../lib/mode.js";
import { progress } from "../lib/progress.js";
import { median, r1, sleep } from "../lib/stats.js";

export interface Mode {
  start_to_ready_ms: number;
  first_run_ms: number;
  samples_ms: number[];
  /** CPU time (user + system, all threads) the process spent until ready: less sensitive than wall time to a busy machine. */
  cpu_to_ready_ms: number;
  rss_ready_mb: number;
}

export interface StartupResult extends Mode {
  params: { quick: boolean; runs: number; command: string; database: string };
  /** The same start from the TypeScript sources through tsx (SWITCHBOARD_FROM_SOURCE=1), for comparison. */
  source: Mode;
  /** Modules of tsx, TypeScript or esbuild, or .ts files, the compiled gateway loaded (test/support/module-audit.mjs): must be none. */
  compilers_loaded: string[];
  modules_loaded: number;
}

/** `discard` first runs are not counted: the first migrates the database (and fills tsx's cache from source). */
export async function measure(
  runs: number,
  discard: number,
  db: string,
  drivers: PlatformDriver[],
  fromSource: boolean,
  audit?: string,
  extraEnv: Record<string, string> = {},
): Promise<Mode> {
  const samples: number[] = [];
  const cpu: number[] = [];
  const rss: number[] = [];
  for (let i = 0; i < runs + discard; i++) {
    const port = await freePort();
    const env: Record<string, string> = {
      ...(process.env as Record<string, string>),
      DATABASE_URL: db,
      HTTP_PORT: String(port),
      HTTP_HOST: "127.0.0.1",
      LOG_LEVEL: "silent",
      DM_POLICY: "open",
    };
    delete env.SWITCHBOARD_FROM_SOURCE;
    if (fromSource) env.SWITCHBOARD_FROM_SOURCE = "1";
    for (const d of drivers) Object.assign(env, d.env());
    if (audit) env.MODULE_AUDIT_FILE = audit;
    Object.assign(env, SERVE_ENV, extraEnv);
    const t0 = performance.now();
    // BENCH_GATEWAY_NODE_FLAGS (as for the forked gateways), e.g. "--cpu-prof --cpu-prof-dir=/tmp/p" to see where a start goes.
    // After `npm start`'s flags and environment (scripts/serve-process.mjs), as it starts.
    const flags = [...SERVE_NODE_FLAGS, ...(process.env.BENCH_GATEWAY_NODE_FLAGS?.split(" ").filter(Boolean) ?? [])];
    const child = spawn(
      process.execPath,
      [...flags, ...(audit ? ["--import", path.join(ROOT, "test/support/module-audit.mjs")] : []), "bin/switchboard.mjs", "serve"],
      {
        cwd: ROOT,
        env,
        stdio: ["ignore", "ignore", "ignore"],
      },
    );
    let ready = false;
    const end = Date.now() + 60_000;
    while (!ready && Date.now() < end && child.exitCode === null) {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/healthz`);
        ready = ((await res.json()) as { ready?: boolean }).ready === true;
      } catch {
        /* not listening yet */
      }
      if (!ready) await sleep(5);
    }
    const ms = performance.now() - t0;
    if (ready) {
      cpu.push(cpuMsOf(child.pid!));
      rss.push(rssOf(child.pid!) / 2 ** 20);
    }
    await stopChild(child, "SIGTERM");
    if (!ready) throw new Error(`switchboard serve${fromSource ? " (from source)" : ""} did not become ready`);
    samples.push(r1(ms));
    progress(`startup${fromSource ? " (source)" : ""}: run ${i + 1}/${runs + discard}: ${r1(ms)} ms`);
  }
  return {
    start_to_ready_ms: median(samples.slice(discard)),
    first_run_ms: samples[0]!,
    samples_ms: samples.slice(discard),
    cpu_to_ready_ms: r1(median(cpu.slice(discard))),
    rss_ready_mb: r1(median(rss.slice(discard))),
  };
}

let built = false;
/** Rebuilds dist/ from the current sources, once per bench run, so a compiled-gateway figure is today's code. */
export function buildCompiled(): void {
  if (built) return;
  execFileSync(process.execPath, [path.join(ROOT, "scripts/build.mjs")], { cwd: ROOT, stdio: "ignore" });
  built = true;
}

/**
 * `node bin/switchboard.mjs serve` with all three adapters on their fakes: spawn to GET /healthz
 * ready:true, on the compiled build (what `npm start` runs; rebuilt first, so it is the current
 * code), then the same from the sources through tsx.
 */
export async function runStartup(quick: boolean, drivers: PlatformDriver[]): Promise<StartupResult> {
  const runs = pick(quick, 5, 3, 1);
  buildCompiled();
  const db = freshSqliteUrl();
  const compiled = await measure(runs, 1, db, drivers, false);
  // The smoke run only checks the document's shape: one uncounted start is enough.
  // Three are enough for the comparison (the full run keeps within its 10 minutes).
  const source = await measure(pick(quick, 3, 3, 1), pick(quick, 1, 1, 0), db, drivers, true);
  // One more compiled start, not timed (the audit hooks cost time): which modules it loads.
  const auditFile = path.join(path.dirname(new URL(db).pathname), "modules.txt");
  await measure(1, 0, db, drivers, false, auditFile);
  const loaded = [
    ...new Set(
      fs
        .readFileSync(auditFile, "utf8")
        .trim()
        .split("\n")
        .map((l) => l.split(" ")[1]!),
    ),
  ];
  const compilers = loaded.filter((u) => /\/node_modules\/(tsx|typescript|esbuild|@esbuild|get-tsconfig)\//.test(u) || /\.[cm]?ts$/.test(u));
  if (compilers.length) throw new Error(`the compiled gateway loaded a TypeScript compiler or source: ${compilers.slice(0, 5).join(", ")}`);
  if (!loaded.some((u) => u.includes("/dist/app/switchboard.cjs")))
    throw new Error("the module audit saw no dist/app/switchboard.cjs: it is not looking at the gateway");
  return {
    params: {
      quick,
      runs,
      command: "node bin/switchboard.mjs serve, compiled build (telegram+discord+slack on fakes)",
      database: "SQLite, migrated by the first (discarded) run",
    },
    ...compiled,
    source,
    compilers_loaded: compilers,
    modules_loaded: loaded.length,
  };
}
