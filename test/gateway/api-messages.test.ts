/**
 * The HTTP API v1 through the real app and HTTP edge (issue 18, acceptance
 * 3): the same Idempotency-Key 10 times, in sequence and at once, and again
 * after a restart, makes one delivery; the same key with another body is
 * 422; "delivered" only with the platform's message id; tokens and scopes;
 * the OpenAPI document, with a mounted sub-app's routes in it.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { createApp, type App } from "../../src/gateway/app.js";
import { apiApp } from "../../src/gateway/http/api/server.js";
import { silentLogger } from "../../src/log.js";
import { eventually } from "../support/app.js";
import { freshDatabaseUrl } from "../support/db.js";
import { MemoryAdapter } from "../support/memory-adapter.js";
import { AdapterError } from "../../adapters/types.js";
import { checkedApi } from "../support/openapi-check.js";

const SEND = "s".repeat(40);
const READ = "r".repeat(40);
const OP = "operator-token-0123456789abcdef";
// Every answer below is checked against the served OpenAPI document after the file.
const api = checkedApi(OP, "api-messages");

let apps: App[] = [];
afterEach(async () => {
  for (const a of apps.splice(0)) await a.stop();
});

async function start(url: string, adapter: MemoryAdapter, env: Record<string, string> = {}) {
  const config = loadConfig({
    DATABASE_URL: url,
    HTTP_PORT: "0",
    LOG_LEVEL: "silent",
    DM_POLICY: "open",
    OPERATOR_TOKEN: OP,
    API_TOKENS: `ci:send+read:${SEND},viewer:read:${READ}`,
    ...env,
  });
  const app = await createApp(config, { log: silentLogger, adapters: () => [adapter], retryIntervalMs: 200 });
  // A module's sub-app (as the schedules API is), mounted with a scope of its own.
  const sub = apiApp();
  sub.openapi(
    createRoute({
      method: "get",
      path: "/",
      responses: { 200: { description: "ok", content: { "application/json": { schema: z.object({ ok: z.boolean() }) } } } },
    }),
    (c) => c.json({ ok: true }, 200),
  );
  app.api.mount("probe", sub, "schedule");
  const base = (await app.start()).replace("0.0.0.0", "127.0.0.1");
  apps.push(app);
  return { app, base };
}

async function call(base: string, path: string, o: { method?: string; token?: string; key?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { ...o.headers };
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  if (o.key) headers["idempotency-key"] = o.key;
  if (o.body !== undefined) headers["content-type"] = "application/json";
  const res = await api.fetch(`${base}${path}`, {
    method: o.method ?? (o.body === undefined ? "GET" : "POST"),
    headers,
    body: o.body === undefined ? undefined : JSON.stringify(o.body),
  });
  return { status: res.status, headers: res.headers, json: (await res.json().catch(() => null)) as Record<string, any> | null };
}

/** A chat the bot knows: a user wrote to it once. */
async function knownChat(adapter: MemoryAdapter, user: string) {
  await adapter.ctx.inbound(adapter.dm(user, "hello"));
  await eventually(
    () => adapter.to(user).length,
    (n) => n === 1,
    10_000,
    "the echo reply",
  );
}

describe("HTTP API v1: /api/v1/schedules, mounted for the schedule scope", () => {
  it("a send-only token is refused; the operator creates, lists and cancels; the document lists the routes", async () => {
    const url = await freshDatabaseUrl("sqlite");
    const adapter = new MemoryAdapter();
    const { base } = await start(url, adapter);
    await knownChat(adapter, "42");
    const body = { conversation: { platform: "telegram", chat: "42" }, every: "1h", text: "stand up" };
    expect((await call(base, "/api/v1/schedules", { token: SEND, body })).status).toBe(403);
    expect((await call(base, "/api/v1/schedules", { body })).status).toBe(401);
    const made = await call(base, "/api/v1/schedules", { token: OP, body });
    expect(made.status).toBe(201);
    const id = made.json!.id as string;
    const listed = await call(base, "/api/v1/schedules", { token: OP });
    expect(listed.json!.schedules.map((j: { id: string }) => j.id)).toEqual([id]);
    expect((await call(base, `/api/v1/schedules/${id}`, { token: OP, method: "DELETE" })).status).toBe(200);
    expect((await call(base, `/api/v1/schedules/${id}`, { token: OP, method: "DELETE" })).status).toBe(409);
    const doc = await call(base, "/api/v1/openapi.json", { token: READ });
    expect(Object.keys(doc.json!.paths)).toEqual(expect.arrayContaining(["/api/v1/schedules", "/api/v1/schedules/{id}"]));
  });
});

describe("HTTP API v1: POST /api/v1/messages", () => {
  it("the same Idempotency-Key 10 times in a row, 10 at once, and again after a restart: one delivery", async () => {
    const url = await freshDatabaseUrl("sqlite");
    const adapter = new MemoryAdapter();
    let { app, base } = await start(url, adapter);
    await knownChat(adapter, "42");
    const body = { conversation: { platform: "telegram", chat: "42" }, text: "Your build is green", mode: "send" };

    const sequential = [];
    for (let i = 0; i < 10; i++) sequential.push(await call(base, "/api/v1/messages", { token: SEND, key: "deploy-1", body }));
    const concurrent = await Promise.all(
      Array.from({ length: 10 }, () => call(base, "/api/v1/messages", { token: SEND, key: "deploy-2", body: { ...body, text: "second" } })),
    );
    for (const r of [...sequential, ...concurrent]) expect(r.status).toBe(202);
    const ids1 = new Set(sequential.map((r) => r.json!.id));
    const ids2 = new Set(concurrent.map((r) => r.json!.id));
    expect(ids1.size).toBe(1);
    expect(ids2.size).toBe(1);
    expect(sequential.filter((r) => r.headers.get("idempotent-replayed") === "true").length).toBe(9);
    expect(concurrent.filter((r) => r.headers.get("idempotent-replayed") === "true").length).toBe(9);

    const id1 = [...ids1][0]!;
    const followed = await eventually(
      () => call(base, `/api/v1/deliveries/${id1}`, { token: SEND }),
      (r) => r.json?.status === "delivered",
      10_000,
      "delivered",
    );
    expect(followed.json!.messages[0].platformMessageId).toMatch(/^\d+$/);
    await eventually(
      () => adapter.to("42").filter((s) => s.text === "second").length,
      (n) => n === 1,
      10_000,
      "the second message",
    );

    // The same key with another request: refused, nothing sent.
    const other = await call(base, "/api/v1/messages", { token: SEND, key: "deploy-1", body: { ...body, text: "something else" } });
    expect(other.status).toBe(422);

    // A restart: the record is in the database, so the retry is a replay.
    await app.stop();
    apps = [];
    ({ app, base } = await start(url, adapter));
    const again = await call(base, "/api/v1/messages", { token: SEND, key: "deploy-1", body });
    expect(again.status).toBe(202);
    expect(again.json!.id).toBe(id1);
    expect(again.headers.get("idempotent-replayed")).toBe("true");

    const green = adapter.to("42").filter((s) => s.text === "Your build is green").length;
    const second = adapter.to("42").filter((s) => s.text === "second").length;
    console.log(
      `idempotency: key 1 sent 10x sequentially + 1x after restart -> ${green} delivery; key 2 sent 10x concurrently -> ${second} delivery; ids ${ids1.size}/${ids2.size}; same key other body -> ${other.status}`,
    );
    expect(green).toBe(1);
    expect(second).toBe(1);
    // The text is in the conversation's transcript as the bot's message.
    const sessions = await app.registry.listAll({ includeArchived: false, limit: 10 });
    const transcript = await app.runner.opts.transcript.recent(sessions[0]!.id, 20);
    expect(transcript.filter((m) => m.role === "assistant" && m.content === "Your build is green").length).toBe(1);
  });

  it("mode agent: one turn per key, also at once; its answer is delivered", async () => {
    const adapter = new MemoryAdapter();
    const { base } = await start(await freshDatabaseUrl("sqlite"), adapter);
    await knownChat(adapter, "7");
    const body = { conversation: { platform: "telegram", chat: "7" }, text: "summarize the day", mode: "agent" };
    const rs = await Promise.all(Array.from({ length: 10 }, () => call(base, "/api/v1/messages", { token: SEND, key: "a-1", body })));
    expect(new Set(rs.map((r) => r.status))).toEqual(new Set([202]));
    expect(new Set(rs.map((r) => r.json!.id)).size).toBe(1);
    const done = await eventually(
      () => call(base, `/api/v1/deliveries/${rs[0]!.json!.id}`, { token: SEND }),
      (r) => r.json?.status === "delivered",
      10_000,
      "the agent's answer delivered",
    );
    const answers = adapter.to("7").filter((s) => s.text.includes("summarize the day"));
    console.log(`agent mode: 10 concurrent requests, one key -> ${answers.length} answer(s), status ${done.json!.status}`);
    expect(answers.length).toBe(1);
    // The prompt is framed: content for the agent, never a chat command.
    expect(answers[0]!.text).toMatch(/^echo: \[Message from the HTTP API, caller ci\]/);
  });

  it("tokens, scopes, unknown conversations and bad requests get clear answers", async () => {
    const adapter = new MemoryAdapter();
    const { base } = await start(await freshDatabaseUrl("sqlite"), adapter);
    await knownChat(adapter, "9");
    const body = { conversation: { platform: "telegram", chat: "9" }, text: "hi" };
    expect((await call(base, "/api/v1/messages", { key: "k", body })).status).toBe(401);
    expect((await call(base, "/api/v1/messages", { token: "x".repeat(40), key: "k", body })).status).toBe(401);
    expect((await call(base, "/api/v1/messages", { token: READ, key: "k", body })).status).toBe(403);
    expect((await call(base, "/api/v1/messages", { token: SEND, body })).status).toBe(400);
    expect(
      (await call(base, "/api/v1/messages", { token: SEND, key: "k2", body: { ...body, conversation: { platform: "telegram", chat: "1000" } } })).status,
    ).toBe(404);
    expect((await call(base, "/api/v1/messages", { token: SEND, key: "k3", body: { ...body, extra: 1 } })).status).toBe(400);
    const bad = await api.fetch(`${base}/api/v1/messages`, {
      method: "POST",
      headers: { authorization: `Bearer ${SEND}`, "idempotency-key": "k4", "content-type": "application/json" },
      body: "{not json",
    });
    expect(bad.status).toBe(400);
    const plain = await api.fetch(`${base}/api/v1/messages`, {
      method: "POST",
      headers: { authorization: `Bearer ${SEND}`, "idempotency-key": "k5", "content-type": "text/plain" },
      body: JSON.stringify(body),
    });
    expect(plain.status).toBe(415);
    const cross = await call(base, "/api/v1/messages", { token: SEND, key: "k6", body, headers: { origin: "https://evil.example" } });
    expect(cross.status).toBe(403);
    // By session id: the conversation the session belongs to.
    const sent = await call(base, "/api/v1/messages", { token: OP, key: "k7", body });
    expect(sent.status).toBe(202);
    // Another caller's delivery is not found for a read-only token; the operator sees it.
    expect((await call(base, `/api/v1/deliveries/${sent.json!.id}`, { token: READ })).status).toBe(404);
    expect((await call(base, `/api/v1/deliveries/${sent.json!.id}`, { token: OP })).status).toBe(200);
    expect(adapter.to("9").filter((s) => s.text === "hi").length).toBeLessThanOrEqual(1);
  });

  it("a message the platform refuses shows failed with the platform's reason, never delivered", async () => {
    const adapter = new MemoryAdapter();
    const { base } = await start(await freshDatabaseUrl("sqlite"), adapter);
    await knownChat(adapter, "13");
    const send = adapter.sink.send;
    adapter.sink.send = async (to, text, opts) => {
      if (text === "to a blocked chat") throw new AdapterError("telegram", "Rejected", "Forbidden: bot was blocked by the user");
      return send(to, text, opts);
    };
    const r = await call(base, "/api/v1/messages", {
      token: SEND,
      key: "blocked-1",
      body: { conversation: { platform: "telegram", chat: "13" }, text: "to a blocked chat" },
    });
    expect(r.status).toBe(202);
    const followed = await eventually(
      () => call(base, `/api/v1/deliveries/${r.json!.id}`, { token: SEND }),
      (x) => x.json?.status !== "queued",
      10_000,
      "a final status",
    );
    console.log(`refused by the platform: status ${followed.json!.status}, error "${followed.json!.error}"`);
    expect(followed.json!.status).toBe("failed");
    expect(followed.json!.error).toContain("bot was blocked");
  });

  it("serves the OpenAPI document, generated from the schemas, with mounted sub-apps' routes", async () => {
    const adapter = new MemoryAdapter();
    const { base } = await start(await freshDatabaseUrl("sqlite"), adapter);
    const doc = await call(base, "/api/v1/openapi.json", { token: READ });
    expect(doc.status).toBe(200);
    expect(Object.keys(doc.json!.paths).sort()).toEqual([
      "/api/v1/deliveries/{id}",
      "/api/v1/messages",
      "/api/v1/openapi.json",
      "/api/v1/probe",
      "/api/v1/schedules",
      "/api/v1/schedules/{id}",
    ]);
    expect(doc.json!.components.schemas.MessageRequest.properties.mode.enum).toEqual(["send", "agent"]);
    // The sub-app's scope holds: a send+read token may not use a schedule route.
    expect((await call(base, "/api/v1/probe", { token: SEND })).status).toBe(403);
    expect((await call(base, "/api/v1/probe", { token: OP })).status).toBe(200);
    expect((await call(base, "/api/v1/openapi.json")).status).toBe(401);
  });
});
