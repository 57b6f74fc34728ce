/**
 * The traffic of the multi-process scenario: chats on Telegram (webhook),
 * Slack (Events API over HTTP) and Discord (gateway shards), each with a
 * list of messages carrying a sequence number (`… #<seq>`) and some `/new`,
 * sent in bursts at a pace the platforms' declared budgets allow.
 *
 * Within a chat, a message is sent only once the one before it was handed
 * over (Slack: acknowledged with 200; Telegram: the fake POSTs its webhook
 * updates one at a time, in order; Discord: the gateway delivers a shard's
 * events in order), so "the order the messages were sent" is well defined
 * and is what the replies must follow.
 */
import type { FakeDiscord } from "../fakes/discord.js";
import { nextTs, type FakeSlack } from "../fakes/slack.js";
import type { FakeTelegram, TgChat, TgUpdate, TgUser } from "../fakes/telegram.js";
import { sleep } from "./helpers.js";

export type Platform = "telegram" | "slack" | "discord";
export const PLATFORMS: Platform[] = ["telegram", "slack", "discord"];

export interface Msg {
  /** Unique across the run; normal messages carry it in their text as `#<seq>`. */
  seq: number;
  isNew: boolean;
  sentAt?: number;
}

export interface Chat {
  platform: Platform;
  kind: "dm" | "group";
  /** Where its replies land, in the fakes' terms (see replyKey in the test). */
  key: string;
  /** Discord: the shard its events go to. */
  shard?: number;
  messages: Msg[];
  send(m: Msg, i: number): Promise<void>;
}

/** A small seeded PRNG (mulberry32), so a run can be repeated. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const textOf = (m: Msg): string => `hello #${m.seq}`;

export interface WorldOptions {
  messages: number;
  chats: number;
  /** Share of the chats (and so of the messages) per platform. */
  share: Record<Platform, number>;
  /** Share of each platform's chats that are groups (Telegram groups, Slack channel threads, Discord guild channels). */
  groupShare: Record<Platform, number>;
  newShare: number;
  shards: number;
  rand: () => number;
}

export interface Fakes {
  tg: FakeTelegram;
  slack: FakeSlack;
  dc: FakeDiscord;
}

export interface Redelivery {
  platform: Platform;
  run(): Promise<void>;
}

export interface WorldHooks {
  /** Slack events go here (the proxy's /slack/events). */
  slackEventsUrl: () => string;
  /** A Telegram update already acknowledged once is posted here again (a redelivery). */
  telegramRedeliver: (u: TgUpdate) => Promise<void>;
  /** Share of Slack events and Telegram updates delivered a second time. */
  redeliverShare: number;
  redeliveries: Array<Promise<void>>;
  counts: { slackRetries: number; redelivered: Record<Platform, number> };
}

/**
 * Builds the chats in the fakes' worlds (Discord guilds are created here, so
 * they must exist before the gateways IDENTIFY) and their message plans.
 */
export function buildWorld(f: Fakes, o: WorldOptions, hooks: WorldHooks): Chat[] {
  const perPlatform: Record<Platform, number> = { telegram: 0, slack: 0, discord: 0 };
  let assigned = 0;
  for (const p of PLATFORMS.slice(1)) assigned += perPlatform[p] = Math.round(o.chats * o.share[p]);
  perPlatform.telegram = o.chats - assigned;
  let seq = 0;
  let chatIndex = 0;
  const plan = (): Msg[] => {
    const n = Math.floor(o.messages / o.chats) + (chatIndex++ < o.messages % o.chats ? 1 : 0);
    const out: Msg[] = [];
    for (let i = 0; i < n; i++) {
      // Never the first message (it opens Slack threads), never two /new in a row.
      const isNew = i > 0 && !out[i - 1]!.isNew && o.rand() < o.newShare;
      out.push({ seq: ++seq, isNew });
    }
    return out;
  };
  const chats: Chat[] = [];
  const groups = (p: Platform) => Math.round(perPlatform[p] * o.groupShare[p]);

  // ---- Telegram: private chats and groups, updates by webhook.
  const { tg, slack, dc } = f;
  const tgRedeliver = (u: TgUpdate) => {
    if (o.rand() >= hooks.redeliverShare) return;
    hooks.counts.redelivered.telegram++;
    hooks.redeliveries.push(hooks.telegramRedeliver(u));
  };
  for (let i = 0; i < perPlatform.telegram; i++) {
    const isGroup = i < groups("telegram");
    const members: TgUser[] = Array.from({ length: isGroup ? 3 : 1 }, (_, k) => tg.user(`Tg${i}x${k}`));
    const chat: TgChat = isGroup ? tg.group(`Team ${i}`) : tg.privateChat(members[0]!);
    chats.push({
      platform: "telegram",
      kind: isGroup ? "group" : "dm",
      key: `telegram:${chat.id}`,
      messages: plan(),
      async send(m, k) {
        const from = members[k % members.length]!;
        const u = m.isNew
          ? isGroup
            ? tg.command({ chat, from, command: "new", addressed: true })
            : tg.userMessage({ chat, from, text: "/new" })
          : isGroup
            ? tg.mention({ chat, from, text: textOf(m) })
            : tg.userMessage({ chat, from, text: textOf(m) });
        tgRedeliver(u);
      },
    });
  }

  // ---- Slack: DMs, and channel threads opened by an @-mention (with its `message` twin).
  const post = async (body: object): Promise<void> => {
    for (let attempt = 0; ; attempt++) {
      let status = 0;
      try {
        status = (await slack.postEvent(hooks.slackEventsUrl(), body, attempt ? { retryNum: Math.min(attempt, 3), retryReason: "http_error" } : {})).status;
      } catch {
        // connection trouble: Slack retries
      }
      if (status === 200) return;
      hooks.counts.slackRetries++;
      if (attempt >= 20) throw new Error(`Slack event not acknowledged after ${attempt + 1} attempts (last status ${status})`);
      await sleep(200);
    }
  };
  const postMaybeTwice = async (body: object): Promise<void> => {
    await post(body);
    if (o.rand() < hooks.redeliverShare) {
      hooks.counts.redelivered.slack++;
      // Slack redelivers when it missed the ack (a timeout): the same body, marked as a retry.
      hooks.redeliveries.push(
        sleep(o.rand() * 1000)
          .then(() => slack.postEvent(hooks.slackEventsUrl(), body, { retryNum: 1, retryReason: "http_timeout" }))
          .then(() => undefined),
      );
    }
  };
  for (let i = 0; i < perPlatform.slack; i++) {
    const isGroup = i < groups("slack");
    const id = String(i).padStart(8, "0");
    const users = Array.from({ length: isGroup ? 3 : 1 }, (_, k) => `U${k}${id}`);
    if (isGroup) {
      const channel = `C${id}`;
      slack.addConversation({ id: channel, type: "channel", name: `chan-${i}`, members: users });
      const threadTs = nextTs();
      chats.push({
        platform: "slack",
        kind: "group",
        key: `slack:${channel}:${threadTs}`,
        messages: plan(),
        async send(m, k) {
          const user = users[k % users.length]!;
          if (k === 0) {
            // A mention comes as two events (message + app_mention) with one ts; answered once.
            const text = `<@${slack.identity.botUserId}> ${textOf(m)}`;
            await postMaybeTwice(slack.events.message({ channel, user, text, ts: threadTs }));
            await postMaybeTwice(slack.events.appMention({ channel, user, text, ts: threadTs }));
            return;
          }
          await postMaybeTwice(slack.events.message({ channel, user, text: m.isNew ? "/new" : textOf(m), threadTs }));
        },
      });
    } else {
      const channel = `D${id}`;
      chats.push({
        platform: "slack",
        kind: "dm",
        key: `slack:${channel}`,
        messages: plan(),
        send: (m) => postMaybeTwice(slack.events.message({ channel, user: users[0]!, text: m.isNew ? "/new" : textOf(m) })),
      });
    }
  }

  // ---- Discord: DMs (shard 0) and guild channels spread over every shard.
  const guildChats = groups("discord");
  const perGuild = 5;
  const guildCount = Math.ceil(guildChats / perGuild);
  let made = 0;
  for (let g = 0; g < guildCount; g++) {
    const members = Array.from({ length: 3 }, (_, k) => dc.user(`dg${g}u${k}`));
    const names = Array.from({ length: Math.min(perGuild, guildChats - made) }, (_, k) => `chan-${k}`);
    const shard = g % o.shards;
    const guild = dc.addGuild({ name: `Guild ${g}`, shard: [shard, o.shards], channels: names, members });
    for (const name of names) {
      const channel = guild.channels[name]!;
      made++;
      chats.push({
        platform: "discord",
        kind: "group",
        key: `discord:${channel.id}`,
        shard,
        messages: plan(),
        async send(m, k) {
          dc.userMessage({ channel, author: members[k % members.length]!, content: `<@${dc.bot.id}> ${m.isNew ? "/new" : textOf(m)}` });
        },
      });
    }
  }
  for (let i = 0; i < perPlatform.discord - guildChats; i++) {
    const user = dc.user(`dd${i}`);
    const channel = dc.dmChannel(user);
    chats.push({
      platform: "discord",
      kind: "dm",
      key: `discord:${channel.id}`,
      shard: 0,
      messages: plan(),
      async send(m) {
        dc.userMessage({ channel, author: user, content: m.isNew ? "/new" : textOf(m) });
      },
    });
  }
  return chats;
}

/**
 * Sends one platform's chats in bursts of `burst` messages (so several are
 * in flight in a chat at once), bursts taken round-robin over the chats and
 * started at `ratePerSec` messages a second in total. A chat's next burst
 * waits until its previous one was handed over.
 */
export async function pace(chats: Chat[], ratePerSec: number, burst: number, rand: () => number): Promise<void> {
  const bursts: Array<{ chat: Chat; from: number; to: number }> = [];
  const rounds = Math.max(0, ...chats.map((c) => Math.ceil(c.messages.length / burst)));
  for (let r = 0; r < rounds; r++) {
    const order = [...chats].sort(() => rand() - 0.5);
    for (const chat of order) {
      const from = r * burst;
      if (from < chat.messages.length) bursts.push({ chat, from, to: Math.min(chat.messages.length, from + burst) });
    }
  }
  const chains = new Map<Chat, Promise<void>>();
  let at = performance.now();
  for (const b of bursts) {
    const wait = at - performance.now();
    if (wait > 0) await sleep(wait);
    at += ((b.to - b.from) * 1000) / ratePerSec;
    const prev = chains.get(b.chat) ?? Promise.resolve();
    chains.set(
      b.chat,
      prev.then(async () => {
        for (let i = b.from; i < b.to; i++) {
          const m = b.chat.messages[i]!;
          m.sentAt = Date.now();
          await b.chat.send(m, i);
        }
      }),
    );
  }
  await Promise.all(chains.values());
}
