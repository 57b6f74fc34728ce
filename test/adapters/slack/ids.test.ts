import fc from "fast-check";
import { describe, expect, it } from "vitest";
import * as ids from "../../../adapters/slack/ids.js";
import { isPrivateChannel } from "../../../src/session/channel.js";

const idArb = (prefix: string): fc.Arbitrary<string> => fc.stringMatching(/^[A-Z0-9]{6,12}$/).map((s) => `${prefix}${s}`);
const tsArb = fc
  .tuple(fc.integer({ min: 1_000_000_000, max: 2_000_000_000 }), fc.integer({ min: 0, max: 999_999 }))
  .map(([s, us]) => `${s}.${String(us).padStart(6, "0")}`);

describe("slack ids", () => {
  it("DM channel: slack:<team>:<bot>:dm:<channel>, private, and round-trips", () => {
    expect(ids.dmChannel("T01", "U0BOT", "D0DM")).toBe("slack:T01:U0BOT:dm:D0DM");
    fc.assert(
      fc.property(idArb("T"), idArb("U"), idArb("D"), (t, b, c) => {
        const ch = ids.dmChannel(t, b, c);
        expect(isPrivateChannel(ch)).toBe(true);
        expect(ids.parseChannel(ch)).toEqual({ teamId: t, botId: b, kind: "dm", channelId: c });
      }),
    );
  });

  it("group channel (and thread) is not private and round-trips", () => {
    fc.assert(
      fc.property(idArb("T"), idArb("U"), idArb("C"), fc.option(tsArb, { nil: undefined }), (t, b, c, ts) => {
        const ch = ids.groupChannel(t, b, c, ts);
        expect(isPrivateChannel(ch)).toBe(false);
        expect(ids.parseChannel(ch)).toEqual({ teamId: t, botId: b, kind: "group", channelId: c, ...(ts ? { threadTs: ts } : {}) });
      }),
    );
    expect(ids.parseChannel("telegram:1:dm:2")).toBeUndefined();
    expect(ids.parseChannel("slack:T1:U1:dm:D1:extra")).toBeUndefined();
  });

  it("external chat id is <team>/<channel> (channel ids are per workspace) and round-trips", () => {
    expect(ids.chatExternalId("T01", "C01")).toBe("T01/C01");
    fc.assert(
      fc.property(idArb("T"), idArb("C"), (t, c) => {
        expect(ids.parseChatExternalId(ids.chatExternalId(t, c))).toEqual({ teamId: t, channelId: c });
      }),
    );
    expect(ids.parseChatExternalId("C01")).toBeUndefined();
  });

  it("message event id is <channel>:<ts> and round-trips", () => {
    fc.assert(
      fc.property(idArb("C"), tsArb, (c, ts) => {
        expect(ids.parseMessageEventId(ids.messageEventId(c, ts))).toEqual({ channelId: c, ts });
      }),
    );
    expect(ids.parseMessageEventId("Ev012345")).toBeUndefined();
  });

  it("reply address: chatId = raw channel, threadId = thread_ts, extra.teamId; round-trips", () => {
    fc.assert(
      fc.property(idArb("U"), idArb("C"), idArb("T"), fc.option(tsArb, { nil: undefined }), (b, c, t, ts) => {
        const target = { channel: c, teamId: t, ...(ts ? { thread_ts: ts } : {}) };
        const a = ids.encodeReplyAddress(b, target);
        expect(a).toMatchObject({ platform: "slack", botId: b, chatId: c, extra: { teamId: t } });
        expect(a.threadId).toBe(ts);
        expect(ids.decodeReplyAddress(JSON.parse(JSON.stringify(a)))).toEqual(target);
      }),
    );
  });

  it("decodeReplyAddress explains bad addresses instead of throwing", () => {
    expect(ids.decodeReplyAddress({ platform: "telegram", botId: "1", chatId: "2" })).toMatchObject({ error: expect.stringContaining("telegram") });
    expect(ids.decodeReplyAddress({ platform: "slack", botId: "U1", chatId: "T1/C1" })).toMatchObject({ error: expect.stringContaining("external id") });
    expect(ids.decodeReplyAddress({ platform: "slack", botId: "U1", chatId: "C1", threadId: "abc" })).toMatchObject({
      error: expect.stringContaining("thread_ts"),
    });
  });

  it("chat kinds: im private (even in a thread), channel/group/mpim group, thread replies in channels are threads", () => {
    expect(ids.chatKindOf("im", "D1")).toBe("private");
    expect(ids.chatKindOf("im", "D1", "1.2")).toBe("private");
    for (const t of ["channel", "group", "mpim"]) expect(ids.chatKindOf(t, "C1")).toBe("group");
    expect(ids.chatKindOf("channel", "C1", "1.2")).toBe("thread");
    expect(ids.chatKindOf(undefined, "D1")).toBe("private");
    expect(ids.chatKindOf(undefined, "C1")).toBe("group");
    expect(ids.chatKindOf("app_home", "D1")).toBeUndefined();
  });

  it("thread memory key", () => {
    expect(ids.threadMemoryKey("U0BOT", "C1", "1.000100")).toBe("slack:U0BOT:thread:C1:1.000100");
  });
});
