/**
 * Acceptance 3 on PostgreSQL, where the race is real: two gateway apps in
 * shared mode on one database get the same Idempotency-Key 10 times each,
 * all at once. The database's unique key picks one request; every other
 * answers with its delivery; the platform gets the text once.
 */
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { createApp, type App } from "../../src/gateway/app.js";
import { silentLogger } from "../../src/log.js";
import { eventually } from "../support/app.js";
import { freshDatabaseUrl } from "../support/db.js";
import { MemoryAdapter } from "../support/memory-adapter.js";
import { checkedApi } from "../support/openapi-check.js";

const TOKEN = "t".repeat(40);
// Every answer below is checked against the served OpenAPI document after the file.
const api = checkedApi(TOKEN, "api-messages-pg");
const apps: App[] = [];
afterEach(async () => {
  for (const a of apps.splice(0)) await a.stop();
});

async function start(url: string, adapter: MemoryAdapter) {
  const config = loadConfig({
    DATABASE_URL: url,
    HTTP_PORT: "0",
    LOG_LEVEL: "silent",
    DM_POLICY: "open",
    SHARED_DATABASE: "true",
    API_TOKENS: `ci:send+read:${TOKEN}`,
  });
  const app = await createApp(config, { log: silentLogger, adapters: () => [adapter], retryIntervalMs: 200 });
  const base = await app.start();
  apps.push(app);
  return { app, base };
}

const post = (base: string, key: string, body: unknown) =>
  api
    .fetch(`${base}/api/v1/messages`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", "idempotency-key": key },
      body: JSON.stringify(body),
    })
    .then(async (r) => ({ status: r.status, json: (await r.json()) as { id: string } }));

describe("HTTP API idempotency on PostgreSQL, two processes", () => {
  it("the same key 10 times at each of two gateways at once: one delivery", async () => {
    const url = await freshDatabaseUrl("postgresql");
    // One platform (one bot) seen by both gateways.
    const a = new MemoryAdapter();
    const b = new MemoryAdapter();
    const one = await start(url, a);
    const two = await start(url, b);
    await a.ctx.inbound(a.dm("42", "hello"));
    await eventually(
      () => a.to("42").length + b.to("42").length,
      (n) => n === 1,
      20_000,
      "the echo reply",
    );
    const body = { conversation: { platform: "telegram", chat: "42" }, text: "one, however often" };
    const rs = await Promise.all(Array.from({ length: 20 }, (_, i) => post(i % 2 ? one.base : two.base, "pg-key-1", body)));
    expect(new Set(rs.map((r) => r.status))).toEqual(new Set([202]));
    const ids = new Set(rs.map((r) => r.json.id));
    const count = () => [...a.sent, ...b.sent].filter((s) => s.text === "one, however often").length;
    await eventually(count, (n) => n >= 1, 20_000, "the delivery");
    // Both gateways settle first, so a second send from either would be counted.
    await Promise.all([one.app.gateway.idle(), two.app.gateway.idle()]);
    const rows = Number(
      (
        await one.app.db.query(
          "test-count",
          one.app.db.q.selectFrom("ApiMessage").select((eb) => eb.fn.countAll<number>().as("n")),
        )
      )[0]!.n,
    );
    console.log(`idempotency on PostgreSQL: 20 concurrent requests over 2 processes, one key -> ${ids.size} id, ${rows} record, ${count()} delivery`);
    expect(ids.size).toBe(1);
    expect(rows).toBe(1);
    expect(count()).toBe(1);
  });
});
