import { afterEach, expect } from "vitest";
import { TelegramAdapter } from "../../../adapters/telegram/index.js";
import { loadConfig } from "../../../src/config.js";
import { createApp, type App } from "../../../src/gateway/app.js";
import { silentLogger } from "../../../src/log.js";
import { FakeTelegram, type TgChat, type TgUser } from "../../fakes/telegram.js";
import { eventually } from "../../support/app.js";
import { freshDatabaseUrl } from "../../support/db.js";

/**
 * The Telegram adapter behind the real gateway against FakeTelegram, for the
 * end-to-end files (e2e.test.ts, e2e-burst.slow.test.ts). Call inside a
 * describe: it registers the afterEach that stops the gateways and the fake.
 */
export function telegramEndToEnd() {
  const apps: App[] = [];
  const t = {
    fake: undefined as unknown as FakeTelegram,
    apps,
    async startFake(): Promise<FakeTelegram> {
      t.fake = new FakeTelegram();
      await t.fake.start();
      return t.fake;
    },
    async gateway(url: string, env: Record<string, string> = {}, mode: "polling" | "webhook" = "polling") {
      const config = loadConfig({ DATABASE_URL: url, HTTP_PORT: "0", LOG_LEVEL: "silent", DM_POLICY: "open", ...env });
      const adapter = new TelegramAdapter({
        token: t.fake.token,
        apiRoot: t.fake.apiRoot,
        mode,
        pollingTimeoutSec: 1,
        ...(mode === "webhook" ? { webhookSecret: "s3cret-hook" } : {}),
      });
      const app = await createApp(config, { log: silentLogger, adapters: () => [adapter] });
      apps.push(app);
      const base = await app.start();
      return { app, base, adapter };
    },
    chats(n: number): Array<{ user: TgUser; chat: TgChat }> {
      return Array.from({ length: n }, (_, i) => {
        const user = t.fake.user(`user${i}`);
        return { user, chat: t.fake.privateChat(user) };
      });
    },
    countReplies(): Map<string, number> {
      const per = new Map<string, number>();
      for (const s of t.fake.sent()) per.set(s.text, (per.get(s.text) ?? 0) + 1);
      return per;
    },
    /** `people` private chats send `perChat` messages each; the gateway is stopped once half are answered and started again. */
    async restartHalfwayThroughBurst(people: number, perChat: number): Promise<void> {
      const fake = await t.startFake();
      const url = await freshDatabaseUrl("sqlite");
      const senders = t.chats(people);
      const total = people * perChat;
      let g = await t.gateway(url);
      for (let i = 0; i < perChat; i++) for (const p of senders) fake.userMessage({ chat: p.chat, from: p.user, text: `burst ${p.user.id}-${i}` });
      await eventually(
        () => fake.sent().length,
        (n) => n >= total / 2,
        60_000,
        "half the replies",
      );
      await g.app.stop();
      apps.length = 0;
      g = await t.gateway(url);
      await eventually(
        () => t.countReplies().size,
        (n) => n >= total,
        90_000,
        `all ${total} replies`,
      );
      // A late or doubled reply is sent before a graceful stop returns (running turns and queued replies finish first).
      await g.app.stop({ graceMs: 30_000 });
      apps.length = 0;
      const per = t.countReplies();
      expect(per.size).toBe(total);
      expect([...per.values()].filter((n) => n > 1)).toEqual([]);
      for (const p of senders) {
        const order = fake.sent({ chatId: p.chat.id }).map((s) => Number(/-(\d+)$/.exec(s.text)![1]));
        expect(order).toEqual([...Array(perChat).keys()]);
      }
    },
  };
  afterEach(async () => {
    for (const a of apps.splice(0)) await a.stop().catch(() => undefined);
    await t.fake?.close();
  });
  return t;
}
