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
  const queries = new Map<string, string[]>();
  const CARD = /^The agent wants to use the tool/;
  return {
    name: "telegram (grammY)",
    approvals: {
      cards(place) {
        const w = where(place);
        return fake
          .sent({ chatId: w.chatId })
          .filter((s) => CARD.test(s.history[0] ? s.text : s.text))
          .map((s) => {
            const msg = fake.message(s.chatId, s.messageId) ?? s.message;
            const rows = (msg.reply_markup as { inline_keyboard?: unknown[][] } | undefined)?.inline_keyboard ?? [];
            return { messageId: String(s.messageId), text: msg.text ?? s.text, buttons: rows.length > 0 };
          });
      },
      async click(place, name, messageId, action) {
        const w = where(place);
        const msg = fake.message(w.chatId, Number(messageId));
        if (!msg) throw new Error(`no message ${messageId}`);
        // A user can only press a button the message has: take its callback_data, as Telegram would send it.
        const buttons = ((msg.reply_markup as { inline_keyboard?: Array<Array<{ callback_data?: string }>> } | undefined)?.inline_keyboard ?? []).flat();
        const data = buttons.map((b) => b.callback_data ?? "").find((d) => d.startsWith(`approval:${action}:`));
        if (!data) throw new Error(`the card has no ${action} button`);
        const u = fake.callbackQuery({ from: user(name), message: msg, data });
        const key = `${JSON.stringify(place)}|${name}`;
        queries.set(key, [...(queries.get(key) ?? []), u.callback_query!.id]);
      },
      privateAnswers(place, name) {
        return (queries.get(`${JSON.stringify(place)}|${name}`) ?? [])
          .map((id) => fake.callbackAnswer(id))
          .filter((a) => a !== undefined)
          .map((a) => String(a!.text ?? ""));
      },
    },
    groups: {
      userId: (name) => String(user(name).id),
      chatId: (place) => String(where(place).chatId),
      separateGroup: (name) => ({ group: name }),
      hasLeft: (place) => fake.hasLeft(where(place).chatId),
    },
    routing: { chatId: (place) => String(where(place).chatId) },
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
      return fake
        .sent({ chatId: w.chatId, ...(w.threadId !== undefined ? { threadId: w.threadId } : {}) })
        .filter((s) => ("thread" in place ? true : s.threadId === undefined))
        .map((s) => s.text);
    },
    async teardown() {
      await fake.close();
    },
  };
}

conformance(telegramDriver);
