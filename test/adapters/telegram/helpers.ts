/**
 * Test plumbing for the Telegram adapter: a small AdapterContext that
 * records what the adapter hands the gateway, and a loopback HTTP bridge
 * that serves the routes the adapter mounts, so FakeTelegram can call the
 * webhook over real HTTP.
 */
import type { Logger } from "../../../src/log.js";
import { captureLogger, RouteBridge } from "../../support/adapter-harness.js";

export { RouteBridge };
import type { AdapterContext, HttpHandler, HttpRequest, InboundEnvelope, InboundResult } from "../../../adapters/types.js";
import { TelegramAdapter, type TelegramAdapterOptions } from "../../../adapters/telegram/index.js";
import type { FakeTelegram, TgUpdate } from "../../fakes/telegram.js";

export interface TestContext extends AdapterContext {
  /** Every envelope inbound was called with, in call order (including failed calls). */
  calls: InboundEnvelope[];
  /** Envelopes whose inbound call resolved. */
  recorded: InboundEnvelope[];
  routes: Map<string, HttpHandler>;
  store: Map<string, string>;
  /** Every log line, to check that no secret is ever written. */
  logLines: string[];
}

export interface TestContextOptions {
  /** Decides per call; return a promise to delay, throw to fail. Default: accept. */
  onInbound?: (env: InboundEnvelope, callIndex: number) => void | Promise<void>;
  /** Reject the first N inbound calls (the database is briefly down). */
  failFirst?: number;
  commands?: { name: string; description: string }[];
  store?: Map<string, string>;
}

export function testLogger(lines: string[]): Logger {
  return captureLogger(lines, { name: "telegram-test", level: "debug" });
}

export function makeContext(o: TestContextOptions = {}): TestContext {
  const calls: InboundEnvelope[] = [];
  const recorded: InboundEnvelope[] = [];
  const routes = new Map<string, HttpHandler>();
  const store = o.store ?? new Map<string, string>();
  const logLines: string[] = [];
  let failures = o.failFirst ?? 0;
  return {
    calls,
    recorded,
    routes,
    store,
    logLines,
    async inbound(env): Promise<InboundResult> {
      const i = calls.length;
      calls.push(env);
      if (failures > 0) {
        failures--;
        throw new Error("database is briefly down");
      }
      await o.onInbound?.(env, i);
      recorded.push(env);
      return { status: "accepted", inboundId: `in-${i}` };
    },
    route(method, path, handler) {
      const key = `${method} ${path}`;
      if (routes.has(key)) throw new Error(`route ${key} mounted twice`);
      routes.set(key, handler);
    },
    kv: {
      get: async (k) => store.get(k),
      set: async (k, v) => {
        store.set(k, v);
      },
    },
    commands: o.commands ?? [
      { name: "new", description: "Start a fresh session" },
      { name: "stop", description: "Stop the current reply" },
    ],
    log: testLogger(logLines),
  };
}

/** Small backoff so retry tests finish in milliseconds. */
export const FAST_BACKOFF = { baseMs: 5, maxMs: 20 };

export function newAdapter(tg: FakeTelegram, extra: Partial<TelegramAdapterOptions> = {}): TelegramAdapter {
  return new TelegramAdapter({ token: tg.token, apiRoot: tg.apiRoot, pollingTimeoutSec: 2, backoff: FAST_BACKOFF, ...extra });
}

/** The eventId the adapter derives for a message update. */
export function eventIdOfUpdate(u: TgUpdate): string {
  const m = u.message ?? u.edited_message;
  if (!m) throw new Error("not a message update");
  return `${m.chat.id}:${m.message_id}`;
}

export function httpRequest(
  method: string,
  path: string,
  headers: Record<string, string | string[] | undefined>,
  rawBody: Buffer,
  query = new URLSearchParams(),
): HttpRequest {
  return { method, path, headers, rawBody, query, params: {} };
}

/** Polls a condition on a short, unref'd timer (for state the fake does not signal). */
export async function until(cond: () => boolean, timeoutMs = 3000, what = "condition"): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise<void>((r) => setTimeout(r, 5).unref());
  }
}
