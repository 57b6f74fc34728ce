/**
 * Probe: an API_TOKENS token, whatever its scopes (even `*`), is no
 * operator: the operator surface (console API, transcripts, /metrics, the
 * console page's own POSTs) answers 401 to it when OPERATOR_TOKEN is set;
 * inside /api/v1 each scope reaches only its routes; and no token (a valid
 * one or a wrong one) is written to the log at any level.
 */
import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { ConsoleAdapter } from "../../../adapters/console/index.js";
import { loadConfig } from "../../../src/config.js";
import { createApp, type App } from "../../../src/gateway/app.js";
import { createLogger } from "../../../src/log.js";
import { eventually } from "../../support/app.js";
import { freshDatabaseUrl } from "../../support/db.js";
import { MemoryAdapter } from "../../support/memory-adapter.js";

const OP = "operator-token-probe-0123456789abcdef";
const SEND = "S".repeat(20) + "send-only-0123456789";
const READ = "R".repeat(20) + "read-only-0123456789";
const SCHED = "C".repeat(20) + "schedule-only-01234567";
const ADMIN = "A".repeat(20) + "admin-only-0123456789";
const ALL = "Z".repeat(20) + "every-scope-0123456789";
const WRONG = "W".repeat(20) + "not-configured-0123456789";

let apps: App[] = [];
afterEach(async () => {
  for (const a of apps.splice(0)) await a.stop();
});

describe("probe: API tokens against the operator surface and each other's scopes", () => {
  it("no API token reaches /api/*, /metrics or the console; scopes hold inside /api/v1; no token is logged", async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, cb) {
        lines.push(String(chunk));
        cb();
      },
    });
    const log = createLogger({ level: "trace", destination: sink, format: "json" });
    const config = loadConfig({
      DATABASE_URL: await freshDatabaseUrl("sqlite"),
      HTTP_PORT: "0",
      LOG_LEVEL: "trace",
      DM_POLICY: "open",
      OPERATOR_TOKEN: OP,
      API_TOKENS: `s:send:${SEND},r:read:${READ},c:schedule:${SCHED},a:admin:${ADMIN},all:*:${ALL}`,
    });
    const adapter = new MemoryAdapter();
    const app = await createApp(config, { log, adapters: () => [adapter, new ConsoleAdapter()] });
    const base = (await app.start()).replace("0.0.0.0", "127.0.0.1");
    apps.push(app);
    await adapter.ctx.inbound(adapter.dm("9", "hello"));
    await eventually(
      () => adapter.to("9").length,
      (n) => n === 1,
      10_000,
      "the echo",
    );

    const call = async (path: string, token: string | undefined, init: RequestInit = {}) => {
      const headers: Record<string, string> = { ...(init.headers as Record<string, string>) };
      if (token) headers.authorization = `Bearer ${token}`;
      const res = await fetch(`${base}${path}`, { ...init, headers, redirect: "manual" });
      await res.arrayBuffer();
      return res.status;
    };

    // The operator's bearer reaches the sessions list: the probe's baseline.
    expect(await call("/api/sessions", OP)).toBe(200);
    const operatorGets = ["/api/sessions", "/api/bindings", "/api/usage", "/api/budgets", "/metrics", "/"];
    const seen: Record<string, number> = {};
    for (const [name, token] of Object.entries({ SEND, READ, SCHED, ADMIN, ALL, WRONG })) {
      for (const p of operatorGets) seen[`${name} GET ${p}`] = await call(p, token);
      seen[`${name} POST /api/console/messages`] = await call("/api/console/messages", token, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ chatId: "dm:ann", text: "hi", clientId: "c1", sender: { id: "ann", name: "Ann" } }),
      });
    }
    const notRefused = Object.entries(seen).filter(([, s]) => s !== 401);
    expect(notRefused).toEqual([]);

    // Inside /api/v1: each scope only its own routes.
    const id = "00000000-0000-4000-8000-000000000000";
    const post = {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": "k1" },
      body: JSON.stringify({ conversation: { platform: "telegram", chat: "9" }, text: "x" }),
    };
    expect(await call(`/api/v1/deliveries/${id}`, SEND)).toBe(403);
    expect(await call(`/api/v1/deliveries/${id}`, SCHED)).toBe(403);
    expect(await call(`/api/v1/deliveries/${id}`, ADMIN)).toBe(403);
    expect(await call("/api/v1/schedules", SEND)).toBe(403);
    expect(await call("/api/v1/schedules", READ)).toBe(403);
    expect(await call("/api/v1/messages", READ, post)).toBe(403);
    expect(await call("/api/v1/messages", SCHED, post)).toBe(403);
    expect(await call("/api/v1/messages", ADMIN, post)).toBe(403);
    expect(await call("/api/v1/messages", WRONG, post)).toBe(401);
    // Path tricks resolve inside the API app, where the scope check runs on the same path.
    expect([403, 404]).toContain(await call("/api/v1/messages/..%2fschedules", SEND));
    expect(await call("/api/v1/deliveries/..%2f..%2f..%2fapi%2fsessions", ALL)).not.toBe(200);

    await app.stop();
    apps = [];
    const all = lines.join("");
    expect(lines.length).toBeGreaterThan(0);
    for (const [name, t] of Object.entries({ OP, SEND, READ, SCHED, ADMIN, ALL, WRONG })) expect(all.includes(t), `${name} in the log`).toBe(false);
  });
});
