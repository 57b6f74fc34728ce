import { fork, spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import { fileURLToPath } from "node:url";
import { sleep } from "./stats.js";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** Resident set size of a process, in bytes (Linux /proc). */
export function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) * 1024 : Number.NaN;
}

/** Starts bench/lib/gateway-child.ts with `env`; resolves with its base URL. */
export async function forkGateway(env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
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

/** The gateway child's heap (bench/lib/gateway-child.ts answers {heap: true}), in bytes. */
export async function heapOf(child: ChildProcess): Promise<NodeJS.MemoryUsage> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error("gateway child did not report its heap in 30 s")), 30_000);
    const on = (m: { memory?: NodeJS.MemoryUsage }) => {
      if (!m?.memory) return;
      clearTimeout(t);
      child.off("message", on);
      resolve(m.memory);
    };
    child.on("message", on);
    child.send({ heap: true });
  });
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
