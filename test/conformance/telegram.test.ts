import { TelegramAdapter } from "../../adapters/telegram/index.js";
import { FakeTelegram, type TgChat, type TgUpdate, type TgUser } from "../fakes/telegram.js";
import type { ConformanceDriver, Place } from "./driver.js";
import { conformance } from "./suite.js";

function telegramDriver(): ConformanceDriver {
  const fake = new FakeTelegram();
  const users = new Map<string, TgUser>();
  const groups = new Map<string, TgChat>();
  const topics = new Map<string, number>();
  const last = new Map<string, TgUpdate>();
  const user = (name: string) => users.get(name) ?? (users.set(name, fake.user(name)), users.get(name)!);
  const group = (name: string) => groups.get(name) ?? (groups.set(name, fake.supergroup(name, { forum: true })), groups.get(name)!);
  const topic = (g: string, t: string) => topics.get(`${g}/${t}`) ?? (topics.set(`${g}/${t}`, fake.forumTopic(group(g), t)), topics.get(`${g}/${t}`)!);
  const where = (place: Place) =>
    "dm" in place
      ? { chatId: fake.privateChat(user(place.dm)).id }
      : "thread" in place
        ? { chatId: group(place.group).id, threadId: topic(place.group, place.thread) }
        : { chatId: group(place.group).id };
  return {
    name: "telegram (grammY)",
    maxTextLength: 4096,
    async setup() {
      await fake.start();
      return { adapter: new TelegramAdapter({ token: fake.token, apiRoot: fake.apiRoot, mode: "polling", pollingTimeoutSec: 1 }) };
    },
    async say(place, name, text, opts = {}) {
      const from = user(name);
      const w = where(place);
      const body = "dm" in place || !opts.mention ? text : `@${fake.botUser.username} ${text}`;
      const chat = "dm" in place ? fake.privateChat(from) : group(place.group);
      const u = fake.userMessage({ chat, from, text: body, ...(w.threadId !== undefined ? { threadId: w.threadId } : {}) });
      last.set(`${JSON.stringify(place)}|${name}`, u);
    },
    async redeliverLast(place, name) {
      const u = last.get(`${JSON.stringify(place)}|${name}`);
      if (!u?.message) throw new Error("nothing to redeliver");
      fake.inject({ message: u.message });
    },
    rateLimitSends(retryAfterSec, count) {
      fake.rateLimitNext("sendMessage", retryAfterSec, count);
    },
    replies(place) {
      const w = where(place);
      return fake.sent({ chatId: w.chatId, ...(w.threadId !== undefined ? { threadId: w.threadId } : {}) })
        .filter((s) => ("thread" in place ? true : s.threadId === undefined))
        .map((s) => s.text);
    },
    async teardown() {
      await fake.close();
    },
  };
}

conformance(telegramDriver);
