/**
 * Test plumbing for the Discord adapter: a small AdapterContext that records
 * what the adapter hands the gateway, and an adapter wired to FakeDiscord.
 */
import type { Logger } from "../../../src/log.js";
import { captureLogger } from "../../support/adapter-harness.js";
import type { AdapterContext, InboundEnvelope, InboundResult } from "../../../adapters/types.js";
import { DiscordAdapter, type DiscordAdapterOptions } from "../../../adapters/discord/index.js";
import type { FakeDiscord } from "../../fakes/discord.js";

export interface TestContext extends AdapterContext {
  /** Envelopes whose inbound call resolved, in order. */
  recorded: InboundEnvelope[];
  /** eventIds seen before: what the gateway's dedupe would drop. */
  duplicates: string[];
  routes: string[];
  store: Map<string, string>;
  logLines: string[];
}

export function testLogger(lines: string[]): Logger {
  return captureLogger(lines, { name: "discord-test", level: "debug" });
}

export function makeContext(o: { store?: Map<string, string>; commands?: { name: string; description: string }[] } = {}): TestContext {
  const recorded: InboundEnvelope[] = [];
  const duplicates: string[] = [];
  const seen = new Set<string>();
  const routes: string[] = [];
  const store = o.store ?? new Map<string, string>();
  const logLines: string[] = [];
  return {
    recorded,
    duplicates,
    routes,
    store,
    logLines,
    async inbound(env): Promise<InboundResult> {
      // The gateway's dedupe in miniature: platform + botId + eventId.
      const key = `${env.platform}:${env.botId}:${env.eventId}`;
      if (seen.has(key)) {
        duplicates.push(env.eventId);
        return { status: "duplicate" };
      }
      seen.add(key);
      recorded.push(env);
      return { status: "accepted", inboundId: `in-${recorded.length}` };
    },
    route(method, path) {
      routes.push(`${method} ${path}`);
    },
    kv: {
      get: async (k) => store.get(k),
      set: async (k, v) => {
        store.set(k, v);
      },
    },
    commands: o.commands ?? [
      { name: "new", description: "Start a fresh session" },
      { name: "status", description: "Show the session" },
      { name: "stop", description: "Stop the current reply" },
      { name: "help", description: "List the commands" },
    ],
    log: testLogger(logLines),
  };
}

/** discord.js waits ~5 s between IDENTIFYs of one shard; tests skip that. */
export const NO_IDENTIFY_THROTTLE = { ws: { buildIdentifyThrottler: () => ({ waitForIdentify: async () => undefined }) } } as const;

export function newAdapter(dc: FakeDiscord, extra: Partial<DiscordAdapterOptions> = {}): DiscordAdapter {
  return new DiscordAdapter({
    token: dc.token,
    apiUrl: dc.apiUrl,
    inboundBackoffMs: 5,
    stopTimeoutMs: 2000,
    clientOptions: { ...NO_IDENTIFY_THROTTLE },
    ...extra,
  });
}

/** Polls a condition on a short, unref'd timer (for state the fake does not signal). */
export async function until(cond: () => boolean, timeoutMs = 3000, what = "condition"): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise<void>((r) => setTimeout(r, 5).unref());
  }
}
