import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { normalizeEvent, startsThread, type SlackIdentity } from "../../../adapters/slack/normalize.js";
import { commandText, normalizeCommand } from "../../../adapters/slack/commands.js";
import { FakeSlack } from "../../fakes/slack.js";

// The builders need no running server.
const sl = new FakeSlack();
const me: SlackIdentity = { teamId: sl.identity.teamId, botUserId: sl.identity.botUserId, botId: sl.identity.botId };
const BOT = `<@${me.botUserId}>`;

describe("normalizeEvent", () => {
  it("a DM is private, addressed, bound on slack:<team>:<bot>:dm:<channel>", () => {
    const body = sl.events.message({ channel: "D0DM0001", user: "U0ALICE", text: "hi &amp; &lt;b&gt;", extra: { user_profile: { display_name: "alice" } } });
    const env = normalizeEvent(body, me)!;
    const ts = String(body.event.ts);
    expect(env).toMatchObject({
      platform: "slack",
      botId: "U0FAKEBOT",
      chatKind: "private",
      chatId: "T0FAKE001/D0DM0001",
      senderId: "U0ALICE",
      senderName: "alice",
      text: "hi & <b>",
      mentioned: true,
      eventId: `D0DM0001:${ts}`,
      messageId: ts,
      channel: "slack:T0FAKE001:U0FAKEBOT:dm:D0DM0001",
      replyTo: { platform: "slack", botId: "U0FAKEBOT", chatId: "D0DM0001", extra: { teamId: "T0FAKE001" } },
    });
    expect(env.replyTo.threadId).toBeUndefined();
    expect(env.occurredAt.getTime()).toBe(Math.floor(Number(ts) * 1000));
  });

  it("channel, private channel and mpim messages are group; unaddressed stays unmentioned", () => {
    for (const [channel, channelType] of [
      ["C0GEN", "channel"],
      ["G0PRIV", "group"],
      ["G0MPIM", "mpim"],
    ] as const) {
      const env = normalizeEvent(sl.events.message({ channel, user: "U0BOB", text: "chatter", channelType }), me)!;
      expect(env).toMatchObject({ chatKind: "group", chatId: `T0FAKE001/${channel}`, mentioned: false, channel: `slack:T0FAKE001:U0FAKEBOT:group:${channel}` });
      expect(env.threadId).toBeUndefined();
    }
  });

  it("app_mention and its twin message share the eventId (<channel>:<ts>) and normalize alike", () => {
    const msg = sl.events.message({ channel: "C0GEN", user: "U0BOB", text: `${BOT} look at this` });
    const mention = sl.events.appMention({ channel: "C0GEN", user: "U0BOB", text: "look at this", ts: String(msg.event.ts) });
    expect(msg.event_id).not.toBe(mention.event_id);
    const a = normalizeEvent(msg, me)!;
    const b = normalizeEvent(mention, me)!;
    expect(a.eventId).toBe(b.eventId);
    expect(a.text).toBe("look at this");
    expect({ ...a, occurredAt: 0 }).toEqual({ ...b, occurredAt: 0 });
  });

  it("a top-level channel mention becomes a thread rooted at the message", () => {
    const body = sl.events.appMention({ channel: "C0GEN", user: "U0BOB", text: "help" });
    const ts = String(body.event.ts);
    const env = normalizeEvent(body, me)!;
    expect(env).toMatchObject({
      chatKind: "thread",
      threadId: ts,
      mentioned: true,
      replyTo: { chatId: "C0GEN", threadId: ts },
      channel: `slack:T0FAKE001:U0FAKEBOT:group:C0GEN:thread:${ts}`,
    });
    expect(startsThread(env)).toBe(true);
  });

  it("thread replies: threadId = thread_ts; mentioned only by a mention or a remembered thread", () => {
    const root = "1700000000.000100";
    const plain = sl.events.message({ channel: "C0GEN", user: "U0BOB", text: "follow up", threadTs: root });
    expect(normalizeEvent(plain, me)).toMatchObject({ chatKind: "thread", threadId: root, mentioned: false, replyTo: { threadId: root } });
    expect(normalizeEvent(plain, me, { knownThread: true })).toMatchObject({ chatKind: "thread", threadId: root, mentioned: true });
    const mentioned = normalizeEvent(sl.events.message({ channel: "C0GEN", user: "U0BOB", text: `${BOT} you there`, threadTs: root }), me)!;
    expect(mentioned).toMatchObject({ threadId: root, mentioned: true, text: "you there" });
    expect(startsThread(mentioned)).toBe(false);
  });

  it("a DM thread reply stays private and replies in the thread", () => {
    const env = normalizeEvent(sl.events.message({ channel: "D0DM0001", user: "U0ALICE", text: "x", threadTs: "1700000000.000100" }), me)!;
    expect(env).toMatchObject({ chatKind: "private", replyTo: { threadId: "1700000000.000100" } });
    expect(env.threadId).toBeUndefined();
  });

  it("ignores the bot's own posts, bot_message, joins; edits and deletes are changes; keeps file_share and thread_broadcast", () => {
    const own1 = sl.events.message({ channel: "C0GEN", user: me.botUserId, text: "mine" });
    const own2 = sl.events.message({ channel: "C0GEN", user: "U0OTHER", text: "mine", extra: { bot_id: me.botId } });
    expect(normalizeEvent(own1, me)).toBeUndefined();
    expect(normalizeEvent(own2, me)).toBeUndefined();
    expect(normalizeEvent(sl.events.botMessage({ channel: "C0GEN", text: "x" }), me)).toBeUndefined();
    const original = normalizeEvent(sl.events.message({ channel: "C0GEN", user: "U0BOB", ts: "1700000000.000001", text: "first" }), me)!;
    const edited = normalizeEvent(
      sl.events.messageChanged({ channel: "C0GEN", user: "U0BOB", ts: "1700000000.000001", text: "edited", previousText: "first" }),
      me,
    );
    expect(edited).toMatchObject({
      text: "edited",
      chatId: original.chatId,
      messageId: original.messageId,
      change: { kind: "edit", messageId: "1700000000.000001" },
    });
    expect(edited!.eventId).not.toBe(original.eventId);
    // An unfurl changes no text: nothing to apply.
    expect(
      normalizeEvent(sl.events.messageChanged({ channel: "C0GEN", user: "U0BOB", ts: "1700000000.000001", text: "same", previousText: "same" }), me),
    ).toBeUndefined();
    expect(normalizeEvent(sl.events.messageDeleted({ channel: "C0GEN", user: "U0BOB", ts: "1700000000.000001", text: "first" }), me)).toMatchObject({
      text: "",
      chatId: original.chatId,
      change: { kind: "delete", messageId: "1700000000.000001" },
    });
    // The bot's own edits are not the user's.
    expect(
      normalizeEvent(sl.events.messageChanged({ channel: "C0GEN", user: me.botUserId, ts: "1700000000.000002", text: "x", previousText: "y" }), me),
    ).toBeUndefined();
    for (const subtype of ["message_deleted", "channel_join", "me_message", "bot_message"])
      expect(normalizeEvent(sl.events.message({ channel: "C0GEN", user: "U0BOB", text: "x", extra: { subtype } }), me)).toBeUndefined();
    const file = normalizeEvent(
      sl.events.message({
        channel: "C0GEN",
        user: "U0BOB",
        text: "",
        extra: { subtype: "file_share", files: [{ id: "F01", name: "a.png", mimetype: "image/png", size: 10 }] },
      }),
      me,
    );
    expect(file?.attachments).toEqual([{ kind: "photo", fileId: "F01", name: "a.png", mimeType: "image/png", size: 10 }]);
    expect(
      normalizeEvent(
        sl.events.message({ channel: "C0GEN", user: "U0BOB", text: "b", threadTs: "1700000000.000100", extra: { subtype: "thread_broadcast" } }),
        me,
      ),
    ).toMatchObject({ chatKind: "thread" });
    // Another app posting as a user: passed on, flagged, so the gateway's policy drops it.
    expect(normalizeEvent(sl.events.message({ channel: "C0GEN", user: "U0APP", text: "x", extra: { bot_id: "B0OTHER" } }), me)).toMatchObject({
      senderIsBot: true,
    });
  });

  it("other event types and malformed bodies give undefined", () => {
    expect(normalizeEvent(sl.events.callback({ type: "reaction_added", user: "U1", item: {} }), me)).toBeUndefined();
    expect(normalizeEvent(sl.events.urlVerification(), me)).toBeUndefined();
    for (const junk of [
      null,
      undefined,
      1,
      "x",
      [],
      {},
      { event: null },
      { event: { type: "message", channel: 1, ts: "1.2", user: "U1" } },
      { event: { type: "message", channel: "C1", ts: "nope", user: "U1" } },
    ])
      expect(normalizeEvent(junk, me)).toBeUndefined();
  });

  it("fuzz: 10,000 arbitrary and near-valid events never throw", () => {
    const near = fc.record(
      {
        type: fc.constantFrom("message", "app_mention", "reaction_added", 5, null),
        subtype: fc.option(fc.constantFrom("file_share", "thread_broadcast", "bot_message", "message_changed", "x"), { nil: undefined }),
        channel: fc.oneof(fc.constantFrom("C0GEN", "D0DM", "G0X", ""), fc.anything()),
        channel_type: fc.oneof(fc.constantFrom("im", "channel", "group", "mpim", "app_home"), fc.anything()),
        user: fc.oneof(fc.constantFrom("U0BOB", me.botUserId), fc.anything()),
        bot_id: fc.oneof(fc.constant(undefined), fc.constantFrom(me.botId, "B0X"), fc.anything()),
        text: fc.oneof(fc.string(), fc.constant(`${BOT} hi`), fc.constant(`<@${me.botUserId}|bot> hi`), fc.anything()),
        ts: fc.oneof(fc.constantFrom("1700000000.000100", "9999999999999.1"), fc.string(), fc.anything()),
        thread_ts: fc.oneof(fc.constant(undefined), fc.constantFrom("1700000000.000100", "1700000000.000200"), fc.anything()),
        files: fc.oneof(
          fc.constant(undefined),
          fc.array(fc.anything()),
          fc.array(fc.record({ id: fc.string(), mimetype: fc.anything(), size: fc.anything() })),
          fc.anything(),
        ),
        user_profile: fc.anything(),
        hidden: fc.anything(),
      },
      { requiredKeys: [] },
    );
    const body = fc.oneof(
      fc.anything(),
      near,
      near.map((event) => ({ type: "event_callback", team_id: "T0FAKE001", event_id: "Ev1", event })),
    );
    let throws = 0;
    let produced = 0;
    fc.assert(
      fc.property(body, fc.boolean(), (b, known) => {
        try {
          const env = normalizeEvent(b, me, { knownThread: known });
          if (env) {
            produced++;
            JSON.stringify(env);
          }
        } catch {
          throws++;
        }
      }),
      // A fixed seed: valid envelopes are rare among random bodies, and the test must reach them every run.
      { numRuns: 10_000, seed: 20261129 },
    );
    expect(throws).toBe(0);
    expect(produced).toBeGreaterThan(0);
  });
});

describe("slash commands", () => {
  const known = ["new", "status", "stop"];
  it("/switchboard <cmd> maps to the chat command; other text is a plain message", () => {
    expect(commandText("/switchboard", "new", known)).toBe("/new");
    expect(commandText("/switchboard", " status ", known)).toBe("/status");
    expect(commandText("/switchboard", "new my topic", known)).toBe("/new my topic");
    expect(commandText("/switchboard", "", known)).toBe("/help");
    expect(commandText("/switchboard", "what is up", known)).toBe("what is up");
    expect(commandText("/new", "x", known)).toBe("/new x");
    expect(commandText("/switchboard", "approve ABCD2345", [...known, "approve"])).toBe("/approve ABCD2345");
    // A leading slash always means a command, known or not (the gateway answers "Unknown command").
    expect(commandText("/switchboard", "/frobnicate x", known)).toBe("/frobnicate x");
  });

  it("normalizes to an addressed envelope keyed by trigger_id; DMs are private", () => {
    const fields = sl.events.slashCommand({ command: "/switchboard", text: "new", user: "U0ALICE", channel: "C0GEN" });
    expect(normalizeCommand(fields, me, known)).toMatchObject({
      chatKind: "group",
      chatId: "T0FAKE001/C0GEN",
      text: "/new",
      mentioned: true,
      eventId: `cmd:${fields.trigger_id}`,
      replyTo: { chatId: "C0GEN" },
    });
    const dm = sl.events.slashCommand({ command: "/switchboard", text: "status", user: "U0ALICE", channel: "D0DM0001" });
    expect(normalizeCommand(dm, me, known)).toMatchObject({ chatKind: "private", channel: "slack:T0FAKE001:U0FAKEBOT:dm:D0DM0001", text: "/status" });
    expect(normalizeCommand({ command: "/x" }, me, known)).toBeUndefined();
  });
});
