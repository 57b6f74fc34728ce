import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  channelOfChat,
  conversationKey,
  decodeReplyAddress,
  dmChannel,
  dmChatId,
  encodeReplyAddress,
  groupChannel,
  groupChatId,
  isConsoleId,
  mentionsBot,
  parseChannel,
  parseChatId,
} from "../../adapters/console/ids.js";
import { isPrivateChannel } from "../../src/session/channel.js";

const idArb = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/);
const optId = fc.option(idArb, { nil: undefined });

describe("console ids", () => {
  it("pins the formats (changing one orphans durable bindings)", () => {
    expect(dmChatId("alice")).toBe("dm:alice");
    expect(groupChatId("team")).toBe("group:team");
    expect(dmChannel("console", "alice")).toBe("console:console:dm:alice");
    expect(groupChannel("console", "team")).toBe("console:console:group:team");
    expect(groupChannel("console", "team", "t1")).toBe("console:console:group:team:thread:t1");
  });

  it("chat ids round-trip, and a user and a group of the same name stay apart", () => {
    fc.assert(
      fc.property(idArb, (id) => {
        expect(parseChatId(dmChatId(id))).toEqual({ kind: "private", userId: id });
        expect(parseChatId(groupChatId(id))).toEqual({ kind: "group", groupId: id });
        expect(dmChatId(id)).not.toBe(groupChatId(id));
      }),
    );
    for (const bad of ["", "alice", "dm:", "dm:a:b", "group:", "dm:-x", "thread:x", "dm:a b", "DM:alice"]) expect(parseChatId(bad)).toBeUndefined();
  });

  it("channels round-trip; only private ones are dm channels", () => {
    fc.assert(
      fc.property(idArb, idArb, idArb, optId, (bot, user, group, thread) => {
        const dm = dmChannel(bot, user);
        const g = groupChannel(bot, group, thread);
        expect(parseChannel(dm)).toEqual({ botId: bot, kind: "dm", userId: user });
        expect(parseChannel(g)).toEqual(
          thread === undefined ? { botId: bot, kind: "group", groupId: group } : { botId: bot, kind: "group", groupId: group, threadId: thread },
        );
        expect(isPrivateChannel(dm)).toBe(true);
        expect(isPrivateChannel(g)).toBe(false);
        expect(channelOfChat(bot, { kind: "private", userId: user })).toBe(dm);
        expect(channelOfChat(bot, { kind: "group", groupId: group }, thread)).toBe(g);
      }),
    );
    for (const bad of [
      "telegram:1:dm:2",
      "console:console:dm",
      "console:console:dm:a:b",
      "console:console:group:g:topic:1",
      "console::dm:a",
      "console:console:other:a",
    ])
      expect(parseChannel(bad)).toBeUndefined();
  });

  it("refuses ids that would break a channel or a URL", () => {
    for (const bad of ["", "a:b", "a b", "-lead", ".lead", "x".repeat(65), "é", "a/b"]) {
      expect(isConsoleId(bad)).toBe(false);
      expect(() => dmChannel("console", bad)).toThrow(/not valid/);
      expect(() => dmChatId(bad)).toThrow(/not valid/);
    }
  });

  it("reply addresses round-trip and foreign ones are explained", () => {
    fc.assert(
      fc.property(idArb, fc.oneof(idArb.map(dmChatId), idArb.map(groupChatId)), optId, (bot, chatId, thread) => {
        const threadId = chatId.startsWith("group:") ? thread : undefined;
        const a = encodeReplyAddress(bot, chatId, threadId);
        const back = decodeReplyAddress(a, bot);
        expect(back).toEqual({ chatId, chat: parseChatId(chatId), ...(threadId !== undefined && { threadId }) });
      }),
    );
    expect(decodeReplyAddress({ platform: "telegram", botId: "console", chatId: "dm:a" }, "console")).toMatchObject({
      error: expect.stringMatching(/telegram/),
    });
    expect(decodeReplyAddress({ platform: "console", botId: "other", chatId: "dm:a" }, "console")).toMatchObject({ error: expect.stringMatching(/other/) });
    expect(decodeReplyAddress({ platform: "console", botId: "console", chatId: "42" }, "console")).toMatchObject({
      error: expect.stringMatching(/dm:<userId>/),
    });
    expect(decodeReplyAddress({ platform: "console", botId: "console", chatId: "dm:a", threadId: "t" }, "console")).toMatchObject({
      error: expect.stringMatching(/thread/),
    });
  });

  it("conversation keys tell threads of one group apart", () => {
    fc.assert(
      fc.property(idArb, idArb, idArb, (g, t1, t2) => {
        const c = groupChatId(g);
        expect(conversationKey(c)).toBe(c);
        expect(conversationKey(c, t1) === conversationKey(c, t2)).toBe(t1 === t2);
        expect(conversationKey(c, t1)).not.toBe(conversationKey(c));
      }),
    );
  });

  it("recognizes @switchboard as a whole word only", () => {
    for (const yes of ["@switchboard hi", "hi @Switchboard", "(@switchboard)", "@switchboard, look", "x\n@switchboard"]) expect(mentionsBot(yes)).toBe(true);
    for (const no of ["switchboard", "@switchboardx", "mail@switchboard", "@@switchboard", "@switch board", "a_@switchboard"])
      expect(mentionsBot(no)).toBe(false);
  });
});
