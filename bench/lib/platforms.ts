import { FakeDiscord, FakeSlack, FakeTelegram, type DChannel, type TgChat, type TgUser } from "../../test/fakes/index.js";

/**
 * One platform fake on 127.0.0.1 with `chats` chats (every fifth a group),
 * a way to make a user say something in chat i, and the replies the fake
 * has received. `watch` stamps each new reply with performance.now() the
 * moment the fake records it.
 */
export interface PlatformDriver {
  readonly name: "telegram" | "discord" | "slack";
  start(): Promise<void>;
  /** Env for a gateway process (the adapter pointed at this fake). */
  env(): Record<string, string>;
  /** Where the gateway under test takes events: Slack's Events API, Telegram's webhook (in webhook mode). */
  setEventsUrl(baseUrl: string): void | Promise<void>;
  say(i: number, text: string): void | Promise<unknown>;
  replies(): readonly { text: string }[];
  waitFor(pred: () => boolean, timeoutMs: number): Promise<unknown>;
  close(): Promise<void>;
}

/** The webhook secret of a Telegram driver in webhook mode. */
export const BENCH_TELEGRAM_SECRET = "bench-webhook-secret";

/** Telegram by long polling, or (`webhook`) by webhook: the fake POSTs each update to the gateway, as Telegram does. */
export function telegramDriver(chats: number, opts: { webhook?: boolean } = {}): PlatformDriver & { fake: FakeTelegram } {
  const fake = new FakeTelegram();
  const places: { chat: TgChat; from: TgUser }[] = [];
  return {
    name: "telegram",
    fake,
    async start() {
      await fake.start();
      for (let i = 0; i < chats; i++) {
        const from = fake.user(`u${i}`);
        places.push({ chat: i % 5 === 0 ? fake.group(`g${i}`) : fake.privateChat(from), from });
      }
    },
    env: () => ({
      TELEGRAM_BOT_TOKEN: fake.token,
      TELEGRAM_API_ROOT: fake.apiRoot,
      ...(opts.webhook ? { TELEGRAM_MODE: "webhook", TELEGRAM_WEBHOOK_SECRET: BENCH_TELEGRAM_SECRET } : {}),
    }),
    async setEventsUrl(base) {
      if (!opts.webhook) return;
      const url = `${base}/telegram/${fake.token.split(":")[0]}`;
      const r = await fetch(`${fake.apiRoot}/bot${fake.token}/setWebhook`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ url, secret_token: BENCH_TELEGRAM_SECRET }),
      });
      if (!r.ok) throw new Error(`setWebhook on the Telegram fake answered ${r.status}`);
    },
    say(i, text) {
      const p = places[i % chats]!;
      fake.userMessage({ chat: p.chat, from: p.from, text });
    },
    replies: () => (fake as unknown as { sentLog: { text: string }[] }).sentLog,
    waitFor: (pred, ms) => fake.waitFor(() => pred() || undefined, ms),
    close: () => fake.close(),
  };
}

export function discordDriver(chats: number): PlatformDriver & { fake: FakeDiscord } {
  const fake = new FakeDiscord();
  const places: { channel: DChannel; author: ReturnType<FakeDiscord["user"]> }[] = [];
  return {
    name: "discord",
    fake,
    async start() {
      await fake.start();
      const groups = Array.from({ length: Math.ceil(chats / 5) }, (_, g) => `room-${g}`);
      const guild = fake.addGuild({ channels: groups });
      for (let i = 0; i < chats; i++) {
        const author = fake.user(`u${i}`);
        places.push({ channel: i % 5 === 0 ? guild.channels[`room-${i / 5}`]! : fake.dmChannel(author), author });
      }
    },
    env: () => ({ DISCORD_BOT_TOKEN: fake.token, DISCORD_API_URL: fake.apiUrl }),
    setEventsUrl() {},
    say(i, text) {
      const p = places[i % chats]!;
      fake.userMessage({ channel: p.channel, author: p.author, content: text });
    },
    replies: () => fake.sent({ via: "channel" }).map((m) => ({ text: m.content })),
    waitFor: (pred, ms) => fake.waitFor(() => pred() || undefined, ms),
    close: () => fake.close(),
  };
}

export function slackDriver(chats: number): PlatformDriver & { fake: FakeSlack } {
  const fake = new FakeSlack();
  let eventsUrl = "";
  let n = 0;
  const id = (p: string, i: number) => `${p}${i.toString(36).toUpperCase().padStart(8, "0")}`;
  return {
    name: "slack",
    fake,
    async start() {
      await fake.start();
    },
    env: () => ({ SLACK_BOT_TOKEN: fake.botToken, SLACK_SIGNING_SECRET: fake.signingSecret, SLACK_API_URL: fake.apiUrl }),
    setEventsUrl(base) {
      eventsUrl = `${base}/slack/events`;
    },
    say(i, text) {
      const c = i % chats;
      const channel = c % 5 === 0 ? id("C", c) : id("D", c);
      const ts = `${Math.floor(Date.now() / 1000)}.${String(++n).padStart(6, "0")}`;
      return fake.postEvent(eventsUrl, fake.events.message({ channel, user: id("U", c), text, ts }));
    },
    replies: () => fake.sent(),
    waitFor: (pred, ms) => fake.waitFor(() => pred() || undefined, ms),
    close: () => fake.close(),
  };
}
