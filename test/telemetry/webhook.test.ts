/**
 * A webhook delivery's trace (issue 30, Build 3): the root is the HTTP
 * request's span after the HTTP semantic conventions (`POST <route>`, kind
 * SERVER, http.request.method, http.route, url.path, server.address,
 * server.port, http.response.status_code), the inbound message its child;
 * the database work of the turn is one span per commit (`COMMIT
 * commit-turn`, db.system.name), never one per statement.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { type App, createApp } from "../../src/gateway/app.js";
import { silentLogger } from "../../src/log.js";
import { freshDatabaseUrl } from "../support/db.js";
import { LoopbackAdapter } from "../support/loopback-adapter.js";
import { LoopbackPlatform } from "../support/loopback-platform.js";
import { OtlpReceiver } from "../support/otlp-receiver.js";

let receiver: OtlpReceiver;
let platform: LoopbackPlatform;
let app: App;
let base: string;
beforeAll(async () => {
  process.env.OTEL_BSP_SCHEDULE_DELAY = "50";
  receiver = await OtlpReceiver.start();
  platform = new LoopbackPlatform();
  const platformUrl = await platform.start();
  const config = loadConfig({
    DATABASE_URL: await freshDatabaseUrl("sqlite"),
    HTTP_PORT: "0",
    LOG_LEVEL: "silent",
    DM_POLICY: "open",
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
  });
  app = await createApp(config, { log: silentLogger, adapters: () => [new LoopbackAdapter(platformUrl, "webhook")], retryIntervalMs: 200 });
  base = (await app.start()).replace("0.0.0.0", "127.0.0.1");
}, 30_000);
afterAll(async () => {
  await app?.stop();
  await platform?.close();
  await receiver?.close();
  delete process.env.OTEL_BSP_SCHEDULE_DELAY;
});

describe("a webhook delivery's trace", () => {
  it("the HTTP request's span is the root, the message its child; one span for the turn's commit", async () => {
    const r = await fetch(`${base}/loopback/update`, {
      method: "POST",
      body: JSON.stringify({ id: 0, chatId: "c1", senderId: "u1", text: "hello", messageId: "m1", date: Date.now() }),
    });
    expect(r.status).toBe(200);
    const spans = await receiver.until((all) => {
      const root = all.find((s) => s.name === "POST /loopback/update");
      return !!root && ["send telegram", "COMMIT commit-turn"].every((n) => all.some((s) => s.traceId === root.traceId && s.name === n));
    });
    const root = spans.find((s) => s.name === "POST /loopback/update")!;
    const trace = spans.filter((s) => s.traceId === root.traceId);
    expect(root.parentSpanId).toBe("");
    expect(root.kind).toBe(2); // SERVER
    const port = Number(new URL(base).port);
    expect(root.attributes).toEqual({
      "http.request.method": "POST",
      "http.route": "/loopback/update",
      "url.path": "/loopback/update",
      "url.scheme": "http",
      "server.address": "127.0.0.1",
      "server.port": port,
      "http.response.status_code": 200,
    });
    const inbound = trace.find((s) => s.name === "inbound telegram")!;
    expect(inbound.parentSpanId).toBe(root.spanId);
    const turn = trace.find((s) => s.name === "turn")!;
    expect(turn.parentSpanId).toBe(inbound.spanId);
    // The database work: the record, and one commit for the turn (under it), not a span per statement.
    const commits = trace.filter((s) => s.name.startsWith("COMMIT "));
    expect(commits.map((s) => s.name)).toEqual(["COMMIT commit-turn"]);
    expect(commits[0]!.parentSpanId).toBe(turn.spanId);
    expect(commits[0]!.attributes).toMatchObject({
      "db.system.name": "sqlite",
      "db.operation.name": "COMMIT",
      "switchboard.db.transaction": "commit-turn",
      "switchboard.db.deliveries": 1,
    });
    expect(
      trace
        .filter((s) => "db.system.name" in s.attributes || "db.operation.name" in s.attributes)
        .map((s) => s.name)
        .sort(),
    ).toEqual(["COMMIT commit-turn", "record inbound"]);
  });
});
