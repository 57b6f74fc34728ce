/**
 * Real `switchboard serve` processes for the multi-process scenario: started
 * with their own environment, ready once `/healthz?ready=1` answers 200
 * (every adapter up), their log lines kept for the report.
 */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
// Not ./helpers.js: the bench runs these processes too, and must load nothing that imports vitest.
import { setTimeout as sleep } from "node:timers/promises";

export interface GatewayProcess {
  index: number;
  port: number;
  child: ChildProcess;
  exited: Promise<void>;
  /** Log lines at warn or above (and anything that is not a log line), and the last lines of any level. */
  readonly problems: string[];
  /** Output lines that contain one of the secrets given at start. */
  readonly leaks: string[];
  tail(): string;
}

export async function startGatewayProcess(
  index: number,
  port: number,
  env: Record<string, string>,
  secrets: string[] = [],
  timeoutMs = 60_000,
): Promise<GatewayProcess> {
  const child = spawn(process.execPath, [path.resolve("bin/switchboard.mjs"), "serve"], {
    env: { ...process.env, ...env, HTTP_PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const problems: string[] = [];
  const leaks: string[] = [];
  let tail = "";
  let partial = "";
  const onData = (d: Buffer) => {
    const text = partial + d.toString("utf8");
    const lines = text.split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines) {
      tail = `${tail + line}\n`.slice(-8000);
      if (secrets.some((x) => line.includes(x))) leaks.push(line.slice(0, 500));
      // pino writes the level as its label ("warn") or its number (40).
      const level = /"level":"?(\w+)"?/.exec(line)?.[1];
      if (!level || ["warn", "error", "fatal", "40", "50", "60"].includes(level)) problems.push(line.slice(0, 2000));
    }
  };
  child.stdout!.on("data", onData);
  child.stderr!.on("data", onData);
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  const proc: GatewayProcess = { index, port, child, exited, problems, leaks, tail: () => tail + partial };
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`gateway ${index} exited ${child.exitCode} before it was ready:\n${proc.tail()}`);
    try {
      const r = await fetch(`http://127.0.0.1:${port}/healthz?ready=1`);
      if (r.status === 200) return proc;
    } catch {
      // not listening yet
    }
    if (Date.now() > end) {
      child.kill("SIGKILL");
      throw new Error(`gateway ${index} did not become ready in ${timeoutMs} ms:\n${proc.tail()}`);
    }
    await sleep(50);
  }
}

/**
 * The environment every process of a shared-mode run takes: one PostgreSQL database shared,
 * DMs open, and one Telegram bot by webhook at `hook` (the proxy in front of the processes).
 */
export function sharedTelegramEnv(o: { databaseUrl: string; token: string; apiRoot: string; hook: string; webhookSecret: string }): Record<string, string> {
  return {
    DATABASE_URL: o.databaseUrl,
    SHARED_DATABASE: "true",
    DM_POLICY: "open",
    LOG_LEVEL: "info",
    CONSOLE_ENABLED: "false",
    TELEGRAM_BOT_TOKEN: o.token,
    TELEGRAM_API_ROOT: o.apiRoot,
    TELEGRAM_MODE: "webhook",
    TELEGRAM_WEBHOOK_SECRET: o.webhookSecret,
    TELEGRAM_WEBHOOK_URL: o.hook,
  };
}

/** SIGTERM (a graceful stop), then SIGKILL if it has not exited in time. */
export async function stopGatewayProcess(g: GatewayProcess, graceMs = 10_000): Promise<void> {
  if (g.child.exitCode !== null || g.child.signalCode !== null) return;
  g.child.kill("SIGTERM");
  const t = setTimeout(() => g.child.kill("SIGKILL"), graceMs);
  t.unref();
  await g.exited;
  clearTimeout(t);
}
