import { afterEach, describe, expect, it } from "vitest";
import { TelegramAdapter } from "../../../adapters/telegram/index.js";
import { loadConfig } from "../../../src/config.js";
import { createApp, type App } from "../../../src/gateway/app.js";
import { silentLogger } from "../../../src/log.js";
import { FakeTelegram, type TgChat, type TgUser } from "../../fakes/telegram.js";
import { eventually } from "../../support/app.js";
import { freshDatabaseUrl } from "../../support/db.js";

/** The Telegram adapter behind the real gateway, end to end against FakeTelegram. */
describe("Telegram end to end", () => {
  let fake: FakeTelegram;
  const apps: App[] = [];
  afterEach(async () => {
    for (const a of apps.splice(0)) await a.stop().catch(() => undefined);
    await fake?.close();
  });

  async function gateway(url: string, env: Record<string, string> = {}, mode: "polling" | "webhook" = "polling") {
    const config = loadConfig({ DATABASE_URL: url, HTTP_PORT: "0", LOG_LEVEL: "silent", DM_POLICY: "open", ...env });
    const adapter = new TelegramAdapter({
      token: fake.token,
      apiRoot: fake.apiRoot,
      mode,
      pollingTimeoutSec: 1,
      ...(mode === "webhook" ? { webhookSecret: "s3cret-hook" } : {}),
    });
    const app = await createApp(config, { log: silentLogger, adapters: () => [adapter] });
    apps.push(app);
    const base = await app.start();
    return { app, base, adapter };
  }

  function chats(n: number): Array<{ user: TgUser; chat: TgChat }> {
    return Array.from({ length: n }, (_, i) => {
      const user = fake.user(`user${i}`);
      return { user, chat: fake.privateChat(user) };
    });
  }

  const countReplies = () => {
    const per = new Map<string, number>();
    for (const s of fake.sent()) per.set(s.text, (per.get(s.text) ?? 0) + 1);
    return per;
  };

  it("a restart halfway through a burst of 500 updates answers every update exactly once", async () => {
    fake = new FakeTelegram();
    await fake.start();
    const url = await freshDatabaseUrl("sqlite");
    const people = chats(50);
    let g = await gateway(url);
    for (let i = 0; i < 10; i++) for (const p of people) fake.userMessage({ chat: p.chat, from: p.user, text: `burst ${p.user.id}-${i}` });
    await eventually(
      () => fake.sent().length,
      (n) => n >= 250,
      60_000,
      "half the replies",
    );
    await g.app.stop();
    apps.length = 0;
    g = await gateway(url);
    await eventually(
      () => countReplies().size,
      (n) => n >= 500,
      90_000,
      "all 500 replies",
    );
    // A late or doubled reply is sent before a graceful stop returns (running turns and queued replies finish first).
    await g.app.stop({ graceMs: 30_000 });
    apps.length = 0;
    const per = countReplies();
    expect(per.size).toBe(500);
    expect([...per.values()].filter((n) => n > 1)).toEqual([]);
    for (const p of people) {
      const order = fake.sent({ chatId: p.chat.id }).map((s) => Number(/-(\d+)$/.exec(s.text)![1]));
      expect(order).toEqual([...Array(10).keys()]);
    }
  }, 180_000);

  it("a 429 storm (retry_after 1-3 s) ends with every reply delivered, in order per chat", async () => {
    fake = new FakeTelegram();
    await fake.start();
    await gateway(await freshDatabaseUrl("sqlite"));
    const people = chats(5);
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
    fake = new FakeTelegram();
    await fake.start();
    const { base, adapter } = await gateway(await freshDatabaseUrl("sqlite"), {}, "webhook");
    const hook = `${base}/telegram/${adapter.botId}`;
    const user = fake.user("hooky");
    const update = fake.build.message({ chat: fake.privateChat(user), from: user, text: "via webhook" });
    const forged = await fake.deliverWebhook(hook, update, "wrong-secret");
    const missing = await fake.deliverWebhook(hook, update);
    expect([forged.status, missing.status]).toEqual([401, 401]);
    await new Promise((r) => setTimeout(r, 300));
    expect(fake.sent()).toEqual([]);
    expect((await fake.deliverWebhook(hook, update, "s3cret-hook")).status).toBe(200);
    expect((await fake.deliverWebhook(hook, update, "s3cret-hook")).status).toBe(200);
    await eventually(
      () => fake.sent().length,
      (n) => n >= 1,
      10_000,
      "the reply",
    );
    // A doubled reply is sent before a graceful stop returns.
    for (const a of apps.splice(0)) await a.stop({ graceMs: 30_000 });
    expect(fake.sent().map((s) => s.text)).toEqual(["echo: via webhook"]);
  });
});
