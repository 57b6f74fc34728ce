import { execFileSync, fork, spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { SERVE_ENV, SERVE_NODE_FLAGS } from "../../scripts/serve-process.mjs";
import { freePort } from "../../tools/pg-cluster.js";
import type { HeapSpace } from "./rss-attribution.js";
import { sleep } from "./stats.js";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));

const CLOCK_TICK_MS = 1000 / Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim() || 100);

/** CPU time (user + system, all threads) a process has spent, in ms (Linux /proc, clock-tick resolution). */
export function cpuMsOf(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) * CLOCK_TICK_MS;
}

/** `pid` and every process it has started that still runs (Linux /proc: each thread's `children`). */
function processTree(pid: number): number[] {
  const tree = [pid];
  let tasks: string[] = [];
  try {
    tasks = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return tree; // exited meanwhile: nothing below it either
  }
  for (const tid of tasks) {
    let kids = "";
    try {
      kids = fs.readFileSync(`/proc/${pid}/task/${tid}/children`, "utf8");
    } catch {
      continue; // the thread ended meanwhile
    }
    for (const kid of kids.split(" ").filter(Boolean)) tree.push(...processTree(Number(kid)));
  }
  return tree;
}

/** Sums `of` over a process and the processes it started (a system such as OpenClaw runs helpers); one that exits meanwhile counts 0. */
export function treeSum(pid: number, of: (pid: number) => number): number {
  let sum = 0;
  for (const p of processTree(pid)) {
    try {
      sum += of(p);
    } catch (err) {
      if (p === pid) throw err; // only a helper may vanish between the listing and the read
    }
  }
  return sum;
}

/** Resident set size of a process, in bytes (Linux /proc). */
export function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) * 1024 : Number.NaN;
}

/**
 * Starts the gateway in a child with `env`; resolves with its base URL. From the sources
 * (bench/lib/gateway-child.ts under tsx), or with `compiled` from the build as `npm start`
 * runs it (bench/lib/compiled-gateway-child.mjs, plain Node), which then listens on a free
 * port and is ready when /healthz says every adapter is.
 */
export async function forkGateway(
  env: Record<string, string>,
  opts: { compiled?: boolean /** The build's folder (default dist/): a test builds its own. */; dist?: string } = {},
): Promise<{ child: ChildProcess; url: string }> {
  if (opts.compiled) {
    const dist = opts.dist ?? path.join(ROOT, "dist");
    if (!fs.existsSync(path.join(dist, "app/switchboard.cjs"))) throw new Error(`the compiled build is missing in ${dist}: run \`npm run build\` first`);
    const port = await freePort();
    const child = fork(fileURLToPath(new URL("./compiled-gateway-child.mjs", import.meta.url)), [], {
      cwd: ROOT,
      env: { ...process.env, ...SERVE_ENV, ...env, HTTP_PORT: String(port), HTTP_HOST: "127.0.0.1", BENCH_DIST: dist },
      // `npm start`'s flags, and no --expose-gc: V8 refuses a code cache made under other flags
      // (the child turns gc on when first asked for a collected heap, after its start).
      execArgv: [...SERVE_NODE_FLAGS, ...(process.env.BENCH_GATEWAY_NODE_FLAGS?.split(" ").filter(Boolean) ?? [])],
      stdio: ["ignore", "ignore", "inherit", "ipc"],
    });
    const url = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`compiled gateway child exited with ${child.exitCode}`);
      if (Date.now() > deadline) throw new Error("compiled gateway child did not answer /healthz in 60 s");
      // Ready is every adapter connected (/healthz `ready`), not only the port open.
      const ok = await fetch(`${url}/healthz`).then(
        async (r) => r.ok && ((await r.json()) as { ready?: boolean }).ready === true,
        () => false,
      );
      if (ok) return { child, url };
      await sleep(25);
    }
  }
  const child = fork(fileURLToPath(new URL("./gateway-child.ts", import.meta.url)), [], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    execArgv: ["--import", "tsx", "--expose-gc"],
    stdio: ["ignore", "ignore", "inherit", "ipc"],
  });
  const url = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error("gateway child did not start in 60 s")), 60_000);
    child.once("message", (m) => {
      clearTimeout(t);
      resolve((m as { url: string }).url);
    });
    child.once("exit", (code) => {
      clearTimeout(t);
      reject(new Error(`gateway child exited with ${code}`));
    });
  });
  return { child, url };
}

/**
 * Sends the gateway child one request and resolves with the `field` of its first answer that
 * has it (gateway-child.ts and compiled-gateway-child.mjs answer over IPC); `what` names the
 * answer in the error if none comes within `ms`.
 */
function ask<T>(child: ChildProcess, request: object, field: string, what: string, ms = 30_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`gateway child did not ${what} in ${ms / 1000} s`)), ms);
    const on = (m: Record<string, unknown> | undefined) => {
      if (!m?.[field]) return;
      clearTimeout(t);
      child.off("message", on);
      resolve(m[field] as T);
    };
    child.on("message", on);
    child.send(request);
  });
}

/** The gateway child's heap (bench/lib/gateway-child.ts answers {heap: true}), in bytes. */
export function heapOf(child: ChildProcess): Promise<NodeJS.MemoryUsage> {
  return ask(child, { heap: true }, "memory", "report its heap");
}

/** The compiled gateway child's V8 heap spaces (v8.getHeapSpaceStatistics), as they stand. */
export function heapSpacesOf(child: ChildProcess): Promise<HeapSpace[]> {
  return ask(child, { spaces: true }, "spaces", "report its heap spaces");
}

/** Has the gateway child write a heap snapshot to `file` (after a full GC); resolves when it is written. */
export function snapshotOf(child: ChildProcess, file: string): Promise<string> {
  return ask(child, { snapshot: file }, "snapshot", "write its heap snapshot", 120_000);
}

export async function stopChild(child: ChildProcess, how: "disconnect" | "SIGTERM" = "disconnect"): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  if (how === "disconnect" && child.connected) child.disconnect();
  else child.kill("SIGTERM");
  const t = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(t);
}

export { spawn, sleep };
