import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  botIdFromToken,
  chatKindOf,
  decodeReplyAddress,
  dmChannel,
  encodeReplyAddress,
  eventIdOf,
  groupChannel,
  groupExternalId,
  parseChannel,
  parseEventId,
  parseMessageId,
  parseThreadExternalId,
  threadExternalId,
  type TelegramTarget,
} from "../../../adapters/telegram/ids.js";
import { isPrivateChannel } from "../../../src/session/channel.js";

const chatIdArb = fc.oneof(
  fc.integer({ min: 1, max: 2 ** 40 }), // users / private chats
  fc.integer({ min: -(2 ** 40), max: -1 }), // basic groups
  fc.integer({ min: 1, max: 10 ** 12 }).map((n) => -(10 ** 12) - n), // -100… supergroups
);
const posId = fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER });
const botIdArb = fc.integer({ min: 1, max: 2 ** 40 }).map(String);

describe("telegram ids", () => {
  it("takes the bot id from the token prefix and refuses anything else", () => {
    expect(botIdFromToken("123456:ABC")).toBe("123456");
    expect(botIdFromToken("7000000001:AAH-x_y")).toBe("7000000001");
    for (const bad of ["", "123456", ":ABC", "abc:def", "0123:abc", "123:", "123:a b", "12 3:abc"]) expect(botIdFromToken(bad)).toBeUndefined();
    fc.assert(fc.property(posId, fc.stringMatching(/^[A-Za-z0-9_-]{1,46}$/), (id, secret) => botIdFromToken(`${id}:${secret}`) === String(id)));
  });

  it("private channel round-trips and is a dm channel; group and topic channels are not", () => {
    expect(dmChannel("123456", 42)).toBe("telegram:123456:dm:42");
    expect(groupChannel("123456", -100123)).toBe("telegram:123456:group:-100123");
    expect(groupChannel("123456", -100123, 7)).toBe("telegram:123456:group:-100123:topic:7");
    fc.assert(
      fc.property(botIdArb, chatIdArb, fc.option(posId, { nil: undefined }), (bot, chat, thread) => {
        const dm = dmChannel(bot, chat);
        const g = groupChannel(bot, chat, thread);
        expect(parseChannel(dm)).toEqual({ botId: bot, chatId: chat, kind: "dm" });
        expect(parseChannel(g)).toEqual(
          thread === undefined ? { botId: bot, chatId: chat, kind: "group" } : { botId: bot, chatId: chat, kind: "group", threadId: thread },
        );
        expect(isPrivateChannel(dm)).toBe(true);
        expect(isPrivateChannel(g)).toBe(false);
      }),
    );
    for (const bad of ["slack:1:dm:2", "telegram:x:dm:2", "telegram:1:dm:02", "telegram:1:dm", "telegram:1:group:-1:topic:x", "telegram:1:other:5"])
      expect(parseChannel(bad)).toBeUndefined();
  });

  it("group and forum-topic external ids round-trip", () => {
    expect(groupExternalId(-100123)).toBe("-100123");
    expect(threadExternalId(-100123, 5)).toBe("-100123:topic:5");
    fc.assert(
      fc.property(chatIdArb, posId, (chat, thread) => {
        expect(parseThreadExternalId(threadExternalId(chat, thread))).toEqual({ chatId: chat, threadId: thread });
        expect(Number(groupExternalId(chat))).toBe(chat);
      }),
    );
    for (const bad of ["-100:topic:", "x:topic:1", "-100:thread:1", "-100:topic:1:2", "-0:topic:1"]) expect(parseThreadExternalId(bad)).toBeUndefined();
  });

  it("event ids are chat:message and round-trip", () => {
    expect(eventIdOf(-100123, 9)).toBe("-100123:9");
    fc.assert(
      fc.property(chatIdArb, posId, (c, m) => {
        expect(parseEventId(eventIdOf(c, m))).toEqual({ chatId: c, messageId: m });
      }),
    );
    expect(parseEventId("1:2:3")).toBeUndefined();
  });

  it("reply addresses round-trip to (chat_id, message_thread_id, reply message id)", () => {
    fc.assert(
      fc.property(botIdArb, chatIdArb, fc.option(posId, { nil: undefined }), fc.option(posId, { nil: undefined }), (bot, chat_id, thread, reply) => {
        const t: TelegramTarget = { chat_id };
        if (thread !== undefined) t.message_thread_id = thread;
        if (reply !== undefined) t.reply_to_message_id = reply;
        const a = encodeReplyAddress(bot, t);
        expect(a.platform).toBe("telegram");
        expect(a.botId).toBe(bot);
        expect(decodeReplyAddress(a)).toEqual(t);
      }),
    );
  });

  it("decoding a malformed reply address explains what is wrong instead of throwing", () => {
    const base = { platform: "telegram", botId: "1", chatId: "-100123" };
    const err = (a: Parameters<typeof decodeReplyAddress>[0]): string => {
      const r = decodeReplyAddress(a);
      if (!("error" in r)) throw new Error("expected an error");
      return r.error;
    };
    expect(err({ ...base, platform: "slack" })).toMatch(/platform "slack"/);
    expect(err({ ...base, chatId: "@channel" })).toMatch(/not a Telegram chat id/);
    expect(err({ ...base, chatId: "99999999999999999999" })).toMatch(/not a Telegram chat id/);
    expect(err({ ...base, threadId: "-100123:topic:5" })).toMatch(/message_thread_id/);
    expect(err({ ...base, threadId: "0" })).toMatch(/message_thread_id/);
    expect(err({ ...base, replyToMessageId: "abc" })).toMatch(/message id/);
    expect(parseMessageId("12")).toBe(12);
    expect(parseMessageId("0")).toBeUndefined();
    expect(parseMessageId("1.5")).toBeUndefined();
  });

  it("chat kind follows chat.type; only a forum topic message is a thread", () => {
    expect(chatKindOf("private")).toBe("private");
    expect(chatKindOf("group")).toBe("group");
    expect(chatKindOf("supergroup")).toBe("group");
    expect(chatKindOf("supergroup", true, 5)).toBe("thread");
    // A reply chain in a plain supergroup has a thread id but is not a topic.
    expect(chatKindOf("supergroup", undefined, 5)).toBe("group");
    expect(chatKindOf("supergroup", true, undefined)).toBe("group");
    expect(chatKindOf("channel")).toBeUndefined();
    expect(chatKindOf("somethingnew")).toBeUndefined();
    expect(chatKindOf(undefined)).toBeUndefined();
  });
});
