/**
 * Shared mode (SHARED_DATABASE on PostgreSQL): the message's trace is stored
 * with its InboundEvent (the traceparent column), and the process that takes
 * the conversation (through the database, never the recorder's memory)
 * continues it: the turn, its model call and the send are in the root's trace.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TelegramAdapter } from "../../adapters/telegram/index.js";
import type { App } from "../../src/gateway/app.js";
import { FakeOpenAi, textReply } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { eventually, startApp } from "../support/app.js";
import { OtlpReceiver } from "../support/otlp-receiver.js";
import { prisma } from "../support/prisma.js";

describe("telemetry in shared mode: the trace is stored with the event", () => {
  let fake: FakeOpenAi;
  let receiver: OtlpReceiver;
  let tg: FakeTelegram;
  let app: App;
  beforeAll(async () => {
    process.env.OTEL_BSP_SCHEDULE_DELAY = "50";
    fake = await FakeOpenAi.start();
    fake.responder = () => textReply(["shared answer"]);
    receiver = await OtlpReceiver.start();
    tg = new FakeTelegram();
    await tg.start();
    const adapter = new TelegramAdapter({ token: tg.token, apiRoot: tg.apiRoot, mode: "polling", pollingTimeoutSec: 1 });
    app = (
      await startApp("postgresql", [adapter], {
        SHARED_DATABASE: "true",
        OPENAI_BASE_URL: fake.baseUrl,
        OPENAI_MODEL: "fake-model",
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      })
    ).app;
  }, 60_000);
  afterAll(async () => {
    await app?.stop();
    await tg?.close();
    await receiver?.close();
    await fake?.close();
    delete process.env.OTEL_BSP_SCHEDULE_DELAY;
  });

  it("the turn taken under the conversation's lease continues the recorded trace", async () => {
    const alice = tg.user("Alice");
    const dm = tg.privateChat(alice);
    tg.userMessage({ chat: dm, from: alice, text: "hello there" });
    await eventually(
      () => tg.sent({ chatId: dm.id }).length,
      (n) => n >= 1,
      20_000,
      "the reply",
    );
    const spans = await receiver.until((all) => {
      const root = all.find((s) => s.name === "inbound telegram");
      return !!root && ["turn", "chat fake-model", "send telegram"].every((n) => all.some((s) => s.name === n && s.traceId === root.traceId));
    });
    const root = spans.find((s) => s.name === "inbound telegram")!;
    const turn = spans.find((s) => s.name === "turn")!;
    expect(turn.traceId).toBe(root.traceId);
    expect(turn.parentSpanId).toBe(root.spanId);
    const [row] = await prisma(app.db).read((db) => db.inboundEvent.findMany({ where: { platform: "telegram" } }));
    expect(row!.traceparent).toBe(`00-${root.traceId}-${root.spanId}-01`);
  }, 40_000);
});
