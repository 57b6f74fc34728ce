/**
 * Traces that start at the HTTP API and the scheduler (issue 30, Build 2):
 * an API request with `traceparent` continues the caller's trace (its
 * `POST /api/v1/*` server span is the caller's span's child, with the HTTP
 * conventions' attributes), and what it sets off stays in that trace: a
 * `send`'s platform call, an `agent` request's inbound message and turn.
 * Without the header it starts its own trace. A scheduled job's run starts
 * its own trace, its send inside it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { type App, createApp } from "../../src/gateway/app.js";
import { silentLogger } from "../../src/log.js";
import { eventually } from "../support/app.js";
import { freshDatabaseUrl } from "../support/db.js";
import { MemoryAdapter } from "../support/memory-adapter.js";
import { OtlpReceiver, type ReceivedSpan } from "../support/otlp-receiver.js";

const OP = "operator-token-0123456789abcdef";
const CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN = "00f067aa0ba902b7";

let receiver: OtlpReceiver;
let adapter: MemoryAdapter;
let app: App;
let base: string;
beforeAll(async () => {
  process.env.OTEL_BSP_SCHEDULE_DELAY = "50";
  receiver = await OtlpReceiver.start();
  adapter = new MemoryAdapter();
  const config = loadConfig({
    DATABASE_URL: await freshDatabaseUrl("sqlite"),
    HTTP_PORT: "0",
    LOG_LEVEL: "silent",
    DM_POLICY: "open",
    OPERATOR_TOKEN: OP,
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
  });
  app = await createApp(config, { log: silentLogger, adapters: () => [adapter], retryIntervalMs: 200 });
  base = (await app.start()).replace("0.0.0.0", "127.0.0.1");
  // A chat the bot knows: a user wrote to it once.
  await adapter.ctx.inbound(adapter.dm("42", "hello"));
  await eventually(
    () => adapter.to("42").length,
    (n) => n === 1,
    10_000,
    "the echo reply",
  );
}, 30_000);
afterAll(async () => {
  await app?.stop();
  await receiver?.close();
  delete process.env.OTEL_BSP_SCHEDULE_DELAY;
});

function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(`${base}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${OP}`, "content-type": "application/json", "idempotency-key": crypto.randomUUID(), ...headers },
    body: JSON.stringify(body),
  });
}

const byId = (spans: ReceivedSpan[]) => new Map(spans.map((s) => [s.spanId, s]));
function ancestors(s: ReceivedSpan, all: Map<string, ReceivedSpan>): ReceivedSpan[] {
  const p = all.get(s.parentSpanId);
  return p ? [p, ...ancestors(p, all)] : [];
}

describe("traces from the HTTP API and the scheduler", () => {
  it("a send with traceparent: the API's server span is the caller's child, the platform call in the same trace", async () => {
    const before = adapter.to("42").length;
    const r = await post(
      "/api/v1/messages",
      { conversation: { platform: "telegram", chat: "42" }, text: "build green", mode: "send" },
      { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` },
    );
    expect(r.status).toBe(202);
    const spans = await receiver.until((all) => all.some((s) => s.traceId === CALLER_TRACE && s.name === "send telegram"));
    expect(adapter.to("42").length).toBe(before + 1);
    const trace = spans.filter((s) => s.traceId === CALLER_TRACE);
    const server = trace.find((s) => s.name === "POST /api/v1/*")!;
    expect(server.parentSpanId).toBe(CALLER_SPAN);
    expect(server.kind).toBe(2); // SERVER
    expect(server.attributes).toMatchObject({
      "http.request.method": "POST",
      "http.route": "/api/v1/*",
      "url.path": "/api/v1/messages",
      "http.response.status_code": 202,
      "server.address": "127.0.0.1",
    });
    const send = trace.find((s) => s.name === "send telegram")!;
    expect(ancestors(send, byId(trace)).map((s) => s.spanId)).toContain(server.spanId);
  });

  it("an agent request with traceparent: the inbound message and its turn continue the caller's trace", async () => {
    const traceId = "0af7651916cd43dd8448eb211c80319c";
    const r = await post(
      "/api/v1/messages",
      { conversation: { platform: "telegram", chat: "42" }, text: "summarise", mode: "agent" },
      { traceparent: `00-${traceId}-b7ad6b7169203331-01` },
    );
    expect(r.status).toBe(202);
    const spans = await receiver.until((all) => ["turn", "send telegram"].every((n) => all.some((s) => s.traceId === traceId && s.name === n)));
    const trace = spans.filter((s) => s.traceId === traceId);
    const server = trace.find((s) => s.name === "POST /api/v1/*")!;
    expect(server.parentSpanId).toBe("b7ad6b7169203331");
    const inbound = trace.find((s) => s.name === "inbound telegram")!;
    expect(inbound.parentSpanId).toBe(server.spanId);
    expect(trace.find((s) => s.name === "turn")!.parentSpanId).toBe(inbound.spanId);
  });

  it("a request that does not authenticate cannot put its spans into the trace it names", async () => {
    const forged = "5f0c2d9e1a7b4c3d8e6f1a2b3c4d5e6f";
    const r = await post(
      "/api/v1/messages",
      { conversation: { platform: "telegram", chat: "42" }, text: "not yours", mode: "send" },
      { traceparent: `00-${forged}-1111111111111111-01`, authorization: "Bearer not-a-token" },
    );
    expect(r.status).toBe(401);
    // The refused request's own span is exported, as a root of a trace of its own.
    const spans = await receiver.until((all) => all.some((s) => s.name === "POST /api/v1/*" && s.attributes["http.response.status_code"] === 401));
    const refused = spans.find((s) => s.name === "POST /api/v1/*" && s.attributes["http.response.status_code"] === 401)!;
    expect(refused.traceId).not.toBe(forged);
    expect(refused.parentSpanId).toBe("");
    expect(spans.filter((s) => s.traceId === forged)).toEqual([]);
  });

  it("without traceparent the API request starts its own trace", async () => {
    const r = await post("/api/v1/messages", { conversation: { platform: "telegram", chat: "42" }, text: "untraced caller", mode: "send" });
    expect(r.status).toBe(202);
    const known = new Set([CALLER_TRACE, "0af7651916cd43dd8448eb211c80319c"]);
    const accepted = (s: ReceivedSpan) =>
      s.name === "POST /api/v1/*" && !known.has(s.traceId) && s.parentSpanId === "" && s.attributes["http.response.status_code"] === 202;
    const spans = await receiver.until((all) => all.some(accepted));
    const server = spans.find(accepted)!;
    await receiver.until((all) => all.some((s) => s.traceId === server.traceId && s.name === "send telegram"));
  });

  it("a scheduled job's run is its own trace, its send inside it", async () => {
    const at = new Date(Date.now() + 1500).toISOString();
    const made = await post("/api/v1/schedules", { conversation: { platform: "telegram", chat: "42" }, at, text: "stand up" });
    expect(made.status).toBe(201);
    const spans = await receiver.until((all) => {
      const job = all.find((s) => s.name === "job text");
      return !!job && all.some((s) => s.traceId === job.traceId && s.name === "send telegram");
    });
    const job = spans.find((s) => s.name === "job text")!;
    expect(job.parentSpanId).toBe("");
    expect(job.attributes["switchboard.job.id"]).toBe(((await made.json()) as { id: string }).id);
    const trace = spans.filter((s) => s.traceId === job.traceId);
    const send = trace.find((s) => s.name === "send telegram")!;
    expect(ancestors(send, byId(trace)).map((s) => s.spanId)).toContain(job.spanId);
  });
});
