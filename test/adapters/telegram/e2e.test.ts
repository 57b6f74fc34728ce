import { describe, expect, it } from "vitest";
import { eventually } from "../../support/app.js";
import { freshDatabaseUrl } from "../../support/db.js";
import { telegramEndToEnd } from "./e2e-harness.js";

/** The Telegram adapter behind the real gateway, end to end against FakeTelegram. */
describe("Telegram end to end", () => {
  const t = telegramEndToEnd();

  it("a restart halfway through a burst of 40 updates answers every update exactly once (500, across getUpdates batches: e2e-burst.slow.test.ts)", async () => {
    await t.restartHalfwayThroughBurst(10, 4);
  }, 120_000);

  it("a 429 storm (retry_after 1-3 s) ends with every reply delivered, in order per chat", async () => {
    const fake = await t.startFake();
    await t.gateway(await freshDatabaseUrl("sqlite"));
    const people = t.chats(5);
    fake.rateLimitNext("sendMessage", 1, 2);
    fake.rateLimitNext("sendMessage", 3, 1);
    fake.rateLimitNext("sendMessage", 2, 2);
    for (let i = 0; i < 4; i++) for (const p of people) fake.userMessage({ chat: p.chat, from: p.user, text: `storm ${p.user.id}-${i}` });
    await eventually(
      () => fake.sent().length,
      (n) => n >= 20,
      60_000,
      "all 20 replies",
    );
    for (const p of people) expect(fake.sent({ chatId: p.chat.id }).map((s) => s.text)).toEqual([0, 1, 2, 3].map((i) => `echo: storm ${p.user.id}-${i}`));
    expect(fake.callsTo("sendMessage").filter((c) => c.status === 429)).toHaveLength(5);
  }, 120_000);

  it("webhook mode: the right secret is processed, a wrong one gets 401 and nothing runs, a repeated update_id is answered once", async () => {
    const fake = await t.startFake();
    const { base, adapter } = await t.gateway(await freshDatabaseUrl("sqlite"), {}, "webhook");
    const hook = `${base}/telegram/${adapter.botId}`;
    const user = fake.user("hooky");
    const update = fake.build.message({ chat: fake.privateChat(user), from: user, text: "via webhook" });
    const evil = fake.build.message({ chat: fake.privateChat(user), from: user, text: "forged" });
    const forged = await fake.deliverWebhook(hook, evil, "wrong-secret");
    const missing = await fake.deliverWebhook(hook, evil);
    expect([forged.status, missing.status]).toEqual([401, 401]);
    expect((await fake.deliverWebhook(hook, update, "s3cret-hook")).status).toBe(200);
    expect((await fake.deliverWebhook(hook, update, "s3cret-hook")).status).toBe(200);
    await eventually(
      () => fake.sent().length,
      (n) => n >= 1,
      10_000,
      "the reply",
    );
    // A doubled reply, or one to the forged update, is sent before a graceful stop returns.
    for (const a of t.apps.splice(0)) await a.stop({ graceMs: 30_000 });
    expect(fake.sent().map((s) => s.text)).toEqual(["echo: via webhook"]);
  });
});
