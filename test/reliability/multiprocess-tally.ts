/**
 * Counting what the multi-process scenario got back: every reply the fakes
 * recorded, grouped by chat in the order the platform received them, held
 * against the order the chat's messages were sent.
 */
import type { FakeDiscord } from "../fakes/discord.js";
import type { FakeSlack } from "../fakes/slack.js";
import type { FakeTelegram } from "../fakes/telegram.js";
import { unmarked } from "../support/notices.js";
import type { Chat, Platform } from "./multiprocess-traffic.js";

export interface Reply {
  key: string;
  text: string;
}

/** Every message the bot posted, in each platform's order of arrival, keyed like Chat.key. */
export function collectReplies(f: { tg: FakeTelegram; slack: FakeSlack; dc: FakeDiscord }): Reply[] {
  return [
    ...f.tg.sent().map((s) => ({ key: `telegram:${s.chatId}`, text: s.text })),
    ...f.slack.sent().map((s) => ({ key: s.channel.startsWith("D") ? `slack:${s.channel}` : `slack:${s.channel}:${s.threadTs ?? s.ts}`, text: s.text })),
    ...f.dc.sent().map((s) => ({ key: `discord:${s.channelId}`, text: s.content })),
  ];
}

export type Token = { seq: number } | "new" | "already" | "other";

export function classify(shown: string): Token {
  const text = unmarked(shown);
  const echo = /^echo: .*#(\d+)\s*$/.exec(text);
  if (echo) return { seq: Number(echo[1]) };
  if (text.startsWith("Started a fresh session")) return "new";
  if (text.startsWith("A fresh session was already started")) return "already";
  return "other";
}

export interface Tally {
  expected: number;
  answered: number;
  missing: number;
  duplicates: number;
  orderViolations: number;
  chatsWithOrderViolations: number;
  rotationReplies: number;
  extraRotationReplies: number;
  alreadyStarted: number;
  unexpected: number;
  samples: string[];
  /** Some replies that arrived late: the message answered late, and the later one answered before it. */
  inversions: Array<{ late: number; early: number }>;
}

/**
 * Per chat: each reply mapped to the position of the message it answers
 * (the k-th "Started a fresh session" answers the k-th /new). A reply whose
 * message was sent before one already answered is an order violation; a
 * message answered twice is a duplicate; one never answered is missing.
 */
export function tally(
  chats: Chat[],
  replies: Reply[],
): Tally & { perPlatform: Record<Platform, { expected: number; missing: number; duplicates: number; orderViolations: number }> } {
  const byKey = new Map<string, Reply[]>();
  for (const r of replies) {
    let list = byKey.get(r.key);
    if (!list) byKey.set(r.key, (list = []));
    list.push(r);
  }
  const t: Tally = {
    expected: 0,
    answered: 0,
    missing: 0,
    duplicates: 0,
    orderViolations: 0,
    chatsWithOrderViolations: 0,
    rotationReplies: 0,
    extraRotationReplies: 0,
    alreadyStarted: 0,
    unexpected: 0,
    samples: [],
    inversions: [],
  };
  const perPlatform = Object.fromEntries(
    (["telegram", "slack", "discord"] as Platform[]).map((p) => [p, { expected: 0, missing: 0, duplicates: 0, orderViolations: 0 }]),
  ) as Record<Platform, { expected: number; missing: number; duplicates: number; orderViolations: number }>;
  const known = new Set(chats.map((c) => c.key));
  for (const chat of chats) {
    const pp = perPlatform[chat.platform];
    const position = new Map<number, number>();
    const newAt: number[] = [];
    chat.messages.forEach((m, i) => (m.isNew ? newAt.push(i) : position.set(m.seq, i)));
    t.expected += chat.messages.length;
    pp.expected += chat.messages.length;
    const seen = new Set<number>();
    let rotations = 0;
    let highest = -1;
    let violations = 0;
    const got: string[] = [];
    for (const r of byKey.get(chat.key) ?? []) {
      const tok = classify(r.text);
      let at: number | undefined;
      if (tok === "other") {
        t.unexpected++;
        if (t.samples.length < 10) t.samples.push(`${chat.key}: ${r.text.slice(0, 200)}`);
        continue;
      }
      if (tok === "already") {
        t.alreadyStarted++;
        got.push("already");
        continue;
      }
      if (tok === "new") {
        t.rotationReplies++;
        got.push("NEW");
        if (rotations >= newAt.length) {
          t.extraRotationReplies++;
          rotations++;
          continue;
        }
        at = newAt[rotations++]!;
      } else {
        got.push(String(tok.seq));
        at = position.get(tok.seq);
        if (at === undefined) {
          t.unexpected++;
          if (t.samples.length < 10) t.samples.push(`${chat.key}: reply to a message of another chat: ${r.text.slice(0, 200)}`);
          continue;
        }
        if (seen.has(tok.seq)) {
          t.duplicates++;
          pp.duplicates++;
          continue;
        }
        seen.add(tok.seq);
      }
      if (at < highest) {
        violations++;
        const early = chat.messages[highest]!;
        if (typeof tok === "object" && !early.isNew && t.inversions.length < 5) t.inversions.push({ late: tok.seq, early: early.seq });
      }
      highest = Math.max(highest, at);
    }
    const missing = position.size - seen.size + Math.max(0, newAt.length - rotations);
    t.missing += missing;
    pp.missing += missing;
    t.answered += chat.messages.length - missing;
    t.orderViolations += violations;
    pp.orderViolations += violations;
    if (violations) {
      t.chatsWithOrderViolations++;
      if (t.samples.length < 10)
        t.samples.push(`${chat.key} order: sent ${chat.messages.map((m) => (m.isNew ? "NEW" : m.seq)).join(",")} got ${got.join(",")}`);
    }
  }
  for (const [key, list] of byKey) {
    if (known.has(key)) continue;
    t.unexpected += list.length;
    if (t.samples.length < 10) t.samples.push(`reply to an unknown chat ${key}: ${list[0]!.text.slice(0, 200)}`);
  }
  return { ...t, perPlatform };
}

export { peakRate } from "./peak-rate.js";

export function percentile(values: number[], p: number): number {
  if (!values.length) return 0;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}
