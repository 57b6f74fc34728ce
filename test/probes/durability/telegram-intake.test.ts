/**
 * Telegram's own redelivery, through the real grammY adapter against
 * FakeTelegram on a real SQLite file: a webhook answered 500 while the store
 * fails is redelivered (same update_id) and answered once; the same update
 * posted twice at once (Telegram's retry after a timeout while the first
 * request still runs) is answered once; a getUpdates batch whose middle
 * update fails to record is retried from that update, nothing skipped,
 * nothing answered twice, each chat in order; a lost acknowledgement of the
 * record on the webhook path is answered without a restart.
 */
import { afterEach, describe, expect, it } from "vitest";
import { TelegramAdapter } from "../../../adapters/telegram/index.js";
import type { App } from "../../../src/gateway/app.js";
import type { StoreFaults } from "../../../src/store/index.js";
import { FakeTelegram } from "../../fakes/telegram.js";
import { eventually } from "../../support/app.js";
import { startAppOn } from "../../support/app-on.js";
import { freshMigratedSqliteUrl } from "../../support/db.js";
import { FaultPlan, faultError, LostAck } from "../../support/faults.js";
import { parsePrometheus } from "../../support/prometheus.js";

let fake: FakeTelegram | undefined;
const apps: App[] = [];
afterEach(async () => {
  for (const a of apps.splice(0)) await a.stop().catch(() => undefined);
  await fake?.close();
  fake = undefined;
});

async function gateway(mode: "polling" | "webhook", faults?: StoreFaults) {
  fake = new FakeTelegram();
  await fake.start();
  const adapter = new TelegramAdapter({
    token: fake.token,
    apiRoot: fake.apiRoot,
    mode,
    pollingTimeoutSec: 1,
    backoff: { baseMs: 20, maxMs: 200 },
    ...(mode === "webhook" && { webhookSecret: "s3cret-hook" }),
  });
  const { app, url } = await startAppOn(
    await freshMigratedSqliteUrl(),
    [adapter],
    { REFLECT_EVERY_TURNS: "0" },
    { retryIntervalMs: 200, ...(faults && { faults }) },
  );
  apps.push(app);
  return { app, url, hook: `${url}/telegram/${adapter.botId}`, fake };
}

async function metric(url: string, name: string, labels: Record<string, string>): Promise<number> {
  let n = 0;
  for (const s of parsePrometheus(await (await fetch(`${url}/metrics`)).text()))
    if (s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)) n += s.value;
  return n;
}

/** Stops every gateway gracefully: a doubled reply would be sent before it returns. */
async function settle(): Promise<void> {
  for (const a of apps.splice(0)) await a.stop({ graceMs: 30_000 });
}

describe("Telegram redelivery and batches against store faults", () => {
  it("webhook: a 500 while the store is full, Telegram's redelivery of the same update_id is answered once, the failure counted", async () => {
    const faults = new FaultPlan();
    const { url, hook, fake: f } = await gateway("webhook", faults);
    const user = f.user("hook");
    const chat = f.privateChat(user);
    faults.once("record-inbound", "SQLITE_FULL");
    const u = f.build.message({ chat, from: user, text: "through the webhook" });
    // Telegram redelivers the same update until it gets a 2xx.
    for (let i = 0; i < 5 && (await f.deliverWebhook(hook, u, "s3cret-hook")).status !== 200; i++);
    await eventually(
      () => f.sent({ chatId: chat.id }).length,
      (n) => n >= 1,
      20_000,
      "the reply",
    );
    const deliveries = f.webhookDeliveries().filter((d) => d.updateId === u.update_id);
    expect(deliveries.map((d) => d.status)).toEqual([500, 200]);
    expect(await metric(url, "switchboard_store_failures_total", { op: "record-inbound" })).toBe(1);
    expect(await metric(url, "switchboard_internal_errors_total", { where: "telegram:telegram-webhook" })).toBeGreaterThanOrEqual(1);
    await settle();
    expect(f.sent({ chatId: chat.id }).map((s) => s.text)).toEqual(["echo: through the webhook"]);
  });

  it("webhook: the same update posted twice at once is answered once", async () => {
    const { hook, fake: f } = await gateway("webhook");
    const user = f.user("twice");
    const chat = f.privateChat(user);
    const u = f.build.message({ chat, from: user, text: "once please" });
    const [a, b] = await Promise.all([f.deliverWebhook(hook, u, "s3cret-hook"), f.deliverWebhook(hook, u, "s3cret-hook")]);
    expect([a.status, b.status]).toEqual([200, 200]);
    await eventually(
      () => f.sent({ chatId: chat.id }).length,
      (n) => n >= 1,
      20_000,
      "the reply",
    );
    await settle();
    expect(f.sent({ chatId: chat.id }).map((s) => s.text)).toEqual(["echo: once please"]);
  });

  it("webhook: the record lands but its acknowledgement is lost; the update is answered once, without a restart", async () => {
    const faults = new LostAck("record-inbound");
    const { hook, fake: f } = await gateway("webhook", faults);
    const user = f.user("lostack");
    const chat = f.privateChat(user);
    const u = f.build.message({ chat, from: user, text: "recorded, unacknowledged" });
    // Telegram keeps redelivering until it gets a 2xx.
    for (let i = 0; i < 5 && (await f.deliverWebhook(hook, u, "s3cret-hook")).status !== 200; i++);
    await eventually(
      () => f.sent({ chatId: chat.id }).length,
      (n) => n >= 1,
      20_000,
      "the reply",
    );
    await settle();
    expect(faults.armed).toBe(false);
    expect(f.sent({ chatId: chat.id }).map((s) => s.text)).toEqual(["echo: recorded, unacknowledged"]);
  });

  it("polling: a batch whose middle update fails to record is retried from it; every update answered once, each chat in order", async () => {
    let calls = 0;
    let armed = false;
    const faults: StoreFaults = {
      onStatement: (op) => {
        if (armed && op === "record-inbound" && ++calls === 3) throw faultError("SQLITE_FULL", op);
      },
    };
    const { fake: f } = await gateway("polling", faults);
    const people = [0, 1].map((i) => {
      const user = f.user(`batch${i}`);
      return { user, chat: f.privateChat(user) };
    });
    armed = true;
    // One getUpdates answer: two chats, three updates each.
    f.injectMany([0, 1, 2].flatMap((n) => people.map((p) => f.build.message({ chat: p.chat, from: p.user, text: `b${p.user.id}-${n}` }))));
    await eventually(
      () => f.sent().length,
      (n) => n >= 6,
      30_000,
      "six replies",
    );
    await settle();
    expect(calls).toBeGreaterThanOrEqual(3);
    for (const p of people) expect(f.sent({ chatId: p.chat.id }).map((s) => s.text)).toEqual([0, 1, 2].map((n) => `echo: b${p.user.id}-${n}`));
    expect(f.pending()).toEqual([]);
  });

  it("polling: a stop while an update cannot be recorded, then a restart on the same file: the update is answered once, nothing skipped", async () => {
    fake = new FakeTelegram();
    await fake.start();
    const f = fake;
    const url = await freshMigratedSqliteUrl();
    const start = async (faults?: StoreFaults) => {
      const adapter = new TelegramAdapter({ token: f.token, apiRoot: f.apiRoot, mode: "polling", pollingTimeoutSec: 1, backoff: { baseMs: 20, maxMs: 200 } });
      const { app } = await startAppOn(url, [adapter], { REFLECT_EVERY_TURNS: "0" }, { retryIntervalMs: 200, ...(faults && { faults }) });
      apps.push(app);
      return app;
    };
    const user = f.user("stuck");
    const chat = f.privateChat(user);
    f.userMessage({ chat, from: user, text: "before" });
    const faults = new FaultPlan();
    const first = await start(faults);
    await eventually(
      () => f.sent({ chatId: chat.id }).length,
      (n) => n >= 1,
      20_000,
      "the first reply",
    );
    faults.for("record-inbound", 600_000, "SQLITE_FULL");
    f.userMessage({ chat, from: user, text: "stuck one" });
    f.userMessage({ chat, from: user, text: "behind it" });
    await eventually(
      () => faults.injected.get("record-inbound") ?? 0,
      (n) => n >= 3,
      20_000,
      "the update failing to record, retried",
    );
    await first.stop({ graceMs: 30_000 });
    apps.length = 0;
    // Nothing was confirmed past the update that could not be recorded.
    expect(f.pending().map((u) => u.message?.text)).toEqual(["stuck one", "behind it"]);
    await start();
    await eventually(
      () => f.sent({ chatId: chat.id }).length,
      (n) => n >= 3,
      20_000,
      "the replies after the restart",
    );
    await settle();
    expect(f.sent({ chatId: chat.id }).map((s) => s.text)).toEqual(["echo: before", "echo: stuck one", "echo: behind it"]);
  });

  it("an edit whose application to the transcript fails once (message-change) is applied once, the next turn sees the edited text", async () => {
    const faults = new FaultPlan();
    const { app, fake: f } = await gateway("polling", faults);
    const user = f.user("editor");
    const chat = f.privateChat(user);
    const original = f.userMessage({ chat, from: user, text: "my number is 1" });
    await eventually(
      () => f.sent({ chatId: chat.id }).length,
      (n) => n >= 1,
      20_000,
      "the first reply",
    );
    await app.gateway.idle();
    faults.once("message-change", "SQLITE_FULL");
    f.editMessage(original.message!, "my number is 2");
    await eventually(
      () => faults.injected.get("message-change") ?? 0,
      (n) => n === 1,
      20_000,
      "the fault",
    );
    const source = `telegram:${f.botUser.id}:${chat.id}:${original.message!.message_id}`;
    const entries = await eventually(
      () => app.runner.opts.transcript.bySource(source),
      (rows) => rows.some((r) => r.content === "my number is 2"),
      20_000,
      "the edit applied",
    );
    expect(entries.map((r) => [r.content, r.editedAt !== null])).toEqual([["my number is 2", true]]);
    await settle();
  });
});
