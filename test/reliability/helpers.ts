/**
 * Shared plumbing for the reliability suite (test/reliability/): the real
 * app on a chosen database, a MemoryAdapter that retries ctx.inbound like a
 * real adapter, captured loggers, slow agents and counters.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { MemoryAdapter } from "../support/memory-adapter.js";
import { abortableSleep } from "../support/runtime.js";
import { loadConfig, type Config } from "../../src/config.js";
import { createApp, type App, type AppOptions } from "../../src/gateway/app.js";
import { createLogger, silentLogger, type Logger } from "../../src/log.js";
import type { Adapter, InboundEnvelope, InboundResult } from "../../adapters/types.js";
import type { Agent } from "../../src/agent/types.js";
import { prisma } from "../support/prisma.js";

/** Every scenario prints one line of counts. */
export function report(scenario: string, counts: Record<string, unknown>): void {
  console.log(`reliability: ${JSON.stringify({ scenario, ...counts })}`);
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export function sqliteUrl(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "switchboard-rel-"));
  return `file:${path.join(dir, "test.db")}`;
}

export function sqliteFileOf(url: string): string {
  return url.slice("file:".length);
}

export interface Booted {
  app: App;
  url: string;
  config: Config;
}

/** The real app (createApp + start) with the given adapters and environment. */
export async function boot(
  databaseUrl: string,
  adapters: Adapter[],
  env: Record<string, string> = {},
  opts: Omit<AppOptions, "adapters"> = {},
): Promise<Booted> {
  const config = loadConfig({ DATABASE_URL: databaseUrl, HTTP_PORT: "0", LOG_LEVEL: "silent", DM_POLICY: "open", REFLECT_EVERY_TURNS: "0", ...env });
  const app = await createApp(config, { log: silentLogger, adapters: () => adapters, retryIntervalMs: 300, ...opts });
  const url = await app.start();
  return { app, url, config };
}

/** A pino logger writing every line into `lines`. */
export function capturedLogger(lines: string[], level = "trace"): Logger {
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(chunk.toString("utf8"));
      cb();
    },
  });
  return createLogger({ level, destination });
}

/**
 * A MemoryAdapter whose `deliver` behaves like a real adapter's intake: the
 * platform keeps the event until ctx.inbound resolves, so a rejection is
 * retried with backoff (as the Telegram adapter does with an unconfirmed
 * offset, or Slack by redelivering after a non-2xx).
 */
export class RetryingAdapter extends MemoryAdapter {
  inboundFailures = 0;
  readonly errors: string[] = [];

  async deliver(env: InboundEnvelope, maxAttempts = 400): Promise<InboundResult> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.ctx.inbound(env);
      } catch (e) {
        this.inboundFailures++;
        this.errors.push(e instanceof Error ? e.message : String(e));
        if (attempt >= maxAttempts) throw e;
        await sleep(Math.min(1000, 20 * 2 ** Math.min(attempt, 6)));
      }
    }
  }
}

/** An agent that answers `echo: <text>` after a delay (so turns are in flight when a fault hits). */
export function slowEcho(delayMs: number, calls?: string[]): () => Agent {
  return () => ({
    name: "slow-echo",
    async *run(req) {
      const last = [...req.messages].reverse().find((m) => m.role === "user")?.content ?? "";
      calls?.push(last);
      await abortableSleep(delayMs, req.signal);
      const text = `echo: ${last}`;
      yield { type: "text-delta", text };
      yield { type: "done", text, toolRounds: 0 };
    },
  });
}

/** Counts of replies per text: how many messages got 0, 1 or more answers. */
export function tally(expected: string[], sent: string[]): { missing: string[]; duplicates: string[]; answered: number } {
  const per = new Map<string, number>();
  for (const t of sent) per.set(t, (per.get(t) ?? 0) + 1);
  return {
    missing: expected.filter((t) => !per.has(t)),
    duplicates: expected.filter((t) => (per.get(t) ?? 0) > 1),
    answered: expected.filter((t) => per.has(t)).length,
  };
}

export async function until(pred: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > end) return false;
    await sleep(25);
  }
  return true;
}

/** Inbound records by status, straight from the database. */
export async function inboundStatuses(app: App): Promise<Record<string, number>> {
  const rows = await prisma(app.db).read((c) => c.inboundEvent.groupBy({ by: ["status"], _count: { _all: true } }));
  return Object.fromEntries(rows.map((r) => [r.status, r._count._all]));
}
