/**
 * Test plumbing for the Slack adapter: a small AdapterContext that records
 * what the adapter hands the gateway, and a loopback HTTP server that serves
 * the routes the adapter mounts (as the gateway's one server would), so
 * FakeSlack can post signed events over real HTTP.
 */
import type { Logger } from "../../../src/log.js";
import { captureLogger, RouteBridge } from "../../support/adapter-harness.js";

export { RouteBridge };
import type { AdapterContext, HttpHandler, InboundEnvelope, InboundResult } from "../../../adapters/types.js";

export interface TestContext extends AdapterContext {
  /** Every envelope inbound was called with, in call order. */
  calls: InboundEnvelope[];
  /** Date.now() when each inbound call resolved (same index as calls). */
  resolvedAt: number[];
  routes: Map<string, HttpHandler>;
  store: Map<string, string>;
  logLines: string[];
}

export interface TestContextOptions {
  /** Runs inside inbound before it resolves: delay to model a slow store, throw to fail. */
  onInbound?: (env: InboundEnvelope, index: number) => void | Promise<void>;
  commands?: { name: string; description: string }[];
}

export function testLogger(lines: string[]): Logger {
  return captureLogger(lines, { name: "slack-test", level: "trace" });
}

export function makeContext(o: TestContextOptions = {}): TestContext {
  const calls: InboundEnvelope[] = [];
  const resolvedAt: number[] = [];
  const routes = new Map<string, HttpHandler>();
  const store = new Map<string, string>();
  const logLines: string[] = [];
  const seen = new Set<string>();
  return {
    calls,
    resolvedAt,
    routes,
    store,
    logLines,
    async inbound(env): Promise<InboundResult> {
      const i = calls.length;
      calls.push(env);
      await o.onInbound?.(env, i);
      resolvedAt[i] = Date.now();
      // Like the gateway: the first delivery of an eventId is accepted, later ones are duplicates.
      if (seen.has(env.eventId)) return { status: "duplicate" };
      seen.add(env.eventId);
      return { status: "accepted", inboundId: `in-${i}` };
    },
    route(method, path, handler) {
      const key = `${method} ${path}`;
      if (routes.has(key)) throw new Error(`route ${key} mounted twice`);
      routes.set(key, handler);
    },
    kv: {
      get: async (k) => store.get(k),
      set: async (k, v) => void store.set(k, v),
    },
    commands: o.commands ?? [
      { name: "new", description: "Start a fresh session" },
      { name: "status", description: "Show the session" },
      { name: "stop", description: "Stop the current reply" },
    ],
    log: testLogger(logLines),
  };
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms).unref());

export async function until(cond: () => boolean, timeoutMs = 3000, what = "condition"): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(5);
  }
}
