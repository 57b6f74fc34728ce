/**
 * Export failures never delay or lose a reply: with the OTLP receiver
 * answering 500, hanging without an answer, or not listening at all, every
 * message is answered, and the stop is not held by the exporter (the batch
 * processor's queue is bounded and exports run beside the pipeline, never
 * in it; the shutdown gives the last flush 3 s).
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { TelegramAdapter } from "../../adapters/telegram/index.js";
import { FakeOpenAi, textReply } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { eventually, startApp } from "../support/app.js";
import { OtlpReceiver } from "../support/otlp-receiver.js";

let fake: FakeOpenAi;
beforeAll(async () => {
  process.env.OTEL_BSP_SCHEDULE_DELAY = "20";
  // An export gives up (its retries included) after 1 s, so the exporter's timers are gone before the file ends (the SDK reads it itself).
  process.env.OTEL_EXPORTER_OTLP_TIMEOUT = "1000";
  fake = await FakeOpenAi.start();
  fake.responder = (body: { messages: Array<{ content: string }> }) => textReply([`echo: ${body.messages.at(-1)?.content}`]);
});
afterAll(async () => {
  delete process.env.OTEL_BSP_SCHEDULE_DELAY;
  delete process.env.OTEL_EXPORTER_OTLP_TIMEOUT;
  await fake.close();
});
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A port nothing listens on (one just closed). */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** Two messages answered while the exporter fails (`exported` waits for a failed export between them); then a bounded stop. */
async function answeredDespite(endpoint: string, exported: () => Promise<void>): Promise<void> {
  const tg = new FakeTelegram();
  await tg.start();
  cleanups.push(() => tg.close());
  const adapter = new TelegramAdapter({ token: tg.token, apiRoot: tg.apiRoot, mode: "polling", pollingTimeoutSec: 1 });
  const { app } = await startApp("sqlite", [adapter], { OPENAI_BASE_URL: fake.baseUrl, OPENAI_MODEL: "fake-model", OTEL_EXPORTER_OTLP_ENDPOINT: endpoint });
  let stopped = false;
  cleanups.push(async () => {
    if (!stopped) await app.stop();
  });
  const alice = tg.user("Alice");
  const dm = tg.privateChat(alice);
  tg.userMessage({ chat: dm, from: alice, text: "one" });
  await eventually(
    () => tg.sent({ chatId: dm.id }).length,
    (n) => n >= 1,
    15_000,
    "the first reply",
  );
  await exported();
  tg.userMessage({ chat: dm, from: alice, text: "two" });
  const replies = await eventually(
    () => tg.sent({ chatId: dm.id }).map((m) => m.text),
    (r) => r.length >= 2,
    15_000,
    "the second reply",
  );
  expect(replies).toEqual(["echo: one", "echo: two"]);
  const started = performance.now();
  await app.stop();
  stopped = true;
  // The shutdown's flush is bounded at 3 s however the exporter fares (the OTLP exporter's own timeout is 10 s).
  expect(performance.now() - started).toBeLessThan(8_000);
}

describe("telemetry export failures never delay or lose a reply", () => {
  it("the receiver answers 500", async () => {
    const receiver = await OtlpReceiver.start();
    cleanups.push(() => receiver.close());
    receiver.status = 500;
    await answeredDespite(receiver.endpoint, () => receiver.untilReceived(() => receiver.requests >= 1));
    expect(receiver.exports).toEqual([]);
  }, 40_000);

  it("the receiver takes the export and never answers", async () => {
    const receiver = await OtlpReceiver.start();
    cleanups.push(() => receiver.close());
    receiver.hang = true;
    await answeredDespite(receiver.endpoint, () => receiver.untilReceived(() => receiver.requests >= 1));
  }, 40_000);

  it("nothing listens at the endpoint", async () => {
    await answeredDespite(`http://127.0.0.1:${await closedPort()}`, async () => undefined);
  }, 40_000);
});
