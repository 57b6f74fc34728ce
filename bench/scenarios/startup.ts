import { spawn } from "node:child_process";
import { freePort } from "../../tools/pg-cluster.js";
import { ROOT, stopChild } from "../lib/child.js";
import { freshSqliteUrl } from "../lib/db.js";
import type { PlatformDriver } from "../lib/platforms.js";
import { pick } from "../lib/mode.js";
import { progress } from "../lib/progress.js";
import { median, r1, sleep } from "../lib/stats.js";

export interface StartupResult {
  params: { quick: boolean; runs: number; command: string; database: string };
  start_to_ready_ms: number;
  first_run_ms: number;
  samples_ms: number[];
}

/** `node bin/switchboard.mjs serve` with all three adapters on their fakes: spawn to GET /healthz ready:true. */
export async function runStartup(quick: boolean, drivers: PlatformDriver[]): Promise<StartupResult> {
  const runs = pick(quick, 5, 3, 1);
  const db = freshSqliteUrl();
  const samples: number[] = [];
  for (let i = 0; i < runs + 1; i++) {
    const port = await freePort();
    const env: Record<string, string> = { ...process.env as Record<string, string>, DATABASE_URL: db, HTTP_PORT: String(port), HTTP_HOST: "127.0.0.1", LOG_LEVEL: "silent", DM_POLICY: "open" };
    for (const d of drivers) Object.assign(env, d.env());
    const t0 = performance.now();
    const child = spawn(process.execPath, ["bin/switchboard.mjs", "serve"], { cwd: ROOT, env, stdio: ["ignore", "ignore", "ignore"] });
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
    await stopChild(child, "SIGTERM");
    if (!ready) throw new Error("switchboard serve did not become ready");
    samples.push(r1(ms));
    progress(`startup: run ${i + 1}/${runs + 1}: ${r1(ms)} ms`);
  }
  const [first, ...rest] = samples;
  return {
    params: { quick, runs, command: "node bin/switchboard.mjs serve (telegram+discord+slack on fakes)", database: "SQLite, migrated by the first (discarded) run" },
    start_to_ready_ms: median(rest),
    first_run_ms: first!,
    samples_ms: rest,
  };
}
