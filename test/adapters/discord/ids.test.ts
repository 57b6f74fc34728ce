/**
 * The Discord identifier formats are durable (bindings carry them), so each
 * encode/decode pair is pinned by examples and by fast-check round trips.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  chatKindOf,
  decodeReplyAddress,
  dmChannel,
  encodeReplyAddress,
  groupChannel,
  groupExternalId,
  isSnowflake,
  nonceOf,
  parseChannel,
  parseThreadExternalId,
  snowflakeTime,
  threadExternalId,
} from "../../../adapters/discord/ids.js";
import { isPrivateChannel } from "../../../src/session/channel.js";

const snowflakeArb = fc.bigInt({ min: 1n, max: (1n << 64n) - 1n }).map(String);
const tokenArb = fc.stringMatching(/^[A-Za-z0-9._-]{1,80}$/);

describe("discord ids", () => {
  it("validates snowflakes: unsigned 64-bit decimal strings without leading zero", () => {
    expect(isSnowflake("175928847299117063")).toBe(true);
    expect(isSnowflake("18446744073709551615")).toBe(true);
    for (const bad of ["18446744073709551616", "0", "0123", "-1", "1.5", "", " 1", 123, null, undefined]) expect(isSnowflake(bad)).toBe(false);
    fc.assert(fc.property(snowflakeArb, (s) => isSnowflake(s)));
  });

  it("reads the creation time from a snowflake", () => {
    // Discord's documented example: 175928847299117063 -> 2016-04-30T11:18:25.796Z
    expect(snowflakeTime("175928847299117063")?.toISOString()).toBe("2016-04-30T11:18:25.796Z");
    expect(snowflakeTime("nope")).toBeUndefined();
  });

  it("DM channel is discord:<botId>:dm:<channelId>, private, and round-trips", () => {
    expect(dmChannel("111", "222")).toBe("discord:111:dm:222");
    expect(isPrivateChannel(dmChannel("111", "222"))).toBe(true);
    fc.assert(
      fc.property(snowflakeArb, snowflakeArb, (bot, ch) => {
        expect(parseChannel(dmChannel(bot, ch))).toEqual({ botId: bot, kind: "dm", channelId: ch });
      }),
    );
  });

  it("group and thread channels are not private and round-trip", () => {
    expect(groupChannel("1", "2")).toBe("discord:1:group:2");
    expect(groupChannel("1", "2", "3")).toBe("discord:1:group:2:thread:3");
    expect(isPrivateChannel(groupChannel("1", "2", "3"))).toBe(false);
    fc.assert(
      fc.property(snowflakeArb, snowflakeArb, fc.option(snowflakeArb, { nil: undefined }), (bot, ch, th) => {
        const parsed = parseChannel(groupChannel(bot, ch, th));
        expect(parsed).toEqual(th === undefined ? { botId: bot, kind: "group", channelId: ch } : { botId: bot, kind: "group", channelId: ch, threadId: th });
      }),
    );
    for (const bad of ["telegram:1:dm:2", "discord:1:dm", "discord:x:dm:2", "discord:1:dm:2:extra", "discord:1:group:2:topic:3"])
      expect(parseChannel(bad)).toBeUndefined();
  });

  it("group external id is the channel id; thread external id matches the gateway's <chatId>:thread:<threadId>", () => {
    expect(groupExternalId("42")).toBe("42");
    expect(threadExternalId("10", "20")).toBe("10:thread:20");
    fc.assert(
      fc.property(snowflakeArb, snowflakeArb, (p, t) => {
        expect(parseThreadExternalId(threadExternalId(p, t))).toEqual({ parentId: p, threadId: t });
      }),
    );
    expect(parseThreadExternalId("10:topic:20")).toBeUndefined();
  });

  it("chat kinds: no guild = DM; threads need a parent; voice/category channels are not conversations", () => {
    expect(chatKindOf({})).toBe("private");
    expect(chatKindOf({ channelType: 1 })).toBe("private");
    expect(chatKindOf({ channelType: 3 })).toBeUndefined();
    expect(chatKindOf({ guildId: "1", channelType: 0 })).toBe("group");
    expect(chatKindOf({ guildId: "1" })).toBe("group");
    expect(chatKindOf({ guildId: "1", channelType: 11, parentId: "5" })).toBe("thread");
    expect(chatKindOf({ guildId: "1", channelType: 11 })).toBe("group");
    expect(chatKindOf({ guildId: "1", channelType: 4 })).toBeUndefined();
  });

  it("reply addresses round-trip, with threads and interactions", () => {
    fc.assert(
      fc.property(
        snowflakeArb,
        snowflakeArb,
        fc.option(snowflakeArb, { nil: undefined }),
        fc.boolean(),
        fc.option(fc.record({ applicationId: snowflakeArb, token: tokenArb }), { nil: undefined }),
        (bot, ch, reply, thread, interaction) => {
          const a = encodeReplyAddress(bot, {
            channelId: ch,
            ...(reply ? { replyToMessageId: reply } : {}),
            ...(thread ? { threadId: ch } : {}),
            ...(interaction ? { interaction } : {}),
          });
          expect(a.platform).toBe("discord");
          expect(a.chatId).toBe(ch);
          expect(decodeReplyAddress(a)).toEqual({ channelId: ch, ...(reply ? { replyToMessageId: reply } : {}), ...(interaction ? { interaction } : {}) });
        },
      ),
    );
    // An address built as (parent, thread) still targets the thread.
    expect(decodeReplyAddress({ platform: "discord", botId: "1", chatId: "10", threadId: "20" })).toEqual({ channelId: "20" });
    for (const bad of [
      { platform: "telegram", botId: "1", chatId: "10" },
      { platform: "discord", botId: "1", chatId: "-100" },
      { platform: "discord", botId: "1", chatId: "10", replyToMessageId: "x" },
      { platform: "discord", botId: "1", chatId: "10", extra: { interactionToken: "t" } },
    ])
      expect(decodeReplyAddress(bad)).toHaveProperty("error");
  });

  it("nonce: 25 base64url characters, stable per key, different across keys", () => {
    expect(nonceOf("d1:0")).toBe(nonceOf("d1:0"));
    expect(nonceOf("d1:0")).not.toBe(nonceOf("d1:1"));
    fc.assert(fc.property(fc.string(), (k) => /^[A-Za-z0-9_-]{25}$/.test(nonceOf(k))));
  });
});
