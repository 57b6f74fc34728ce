/**
 * normalizeUpdate against updates built by FakeTelegram's builders (the
 * shapes the real Bot API sends). The builders need no running server.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { normalizeUpdate, type BotIdentity } from "../../../adapters/telegram/normalize.js";
import { FakeTelegram, type TgMessage, type TgUpdate, type TgUser } from "../../fakes/telegram.js";

let tg: FakeTelegram;
let bot: BotIdentity;
let alice: TgUser;

beforeEach(() => {
  tg = new FakeTelegram();
  bot = { id: String(tg.botUser.id), username: tg.botUser.username! };
  alice = tg.user("Alice", { last_name: "Liddell" });
});

const norm = (u: TgUpdate | Record<string, unknown>) => normalizeUpdate(u, bot);
const must = (u: TgUpdate) => {
  const env = norm(u);
  if (!env) throw new Error("expected an envelope");
  return env;
};
/** A message the bot itself sent earlier (for reply-to-bot). */
const botMessage = (chat: TgMessage["chat"], id = 900): TgMessage => ({ message_id: id, from: tg.botUser, chat, date: 1_700_000_000, text: "I am the bot" });

describe("normalizeUpdate", () => {
  it("a private message becomes a private envelope with a dm channel", () => {
    const chat = tg.privateChat(alice);
    const u = tg.build.message({ chat, from: alice, text: "hello" });
    const env = must(u);
    const m = u.message!;
    expect(env).toEqual({
      platform: "telegram",
      botId: bot.id,
      chatKind: "private",
      chatId: String(alice.id),
      senderId: String(alice.id),
      senderName: "Alice Liddell",
      text: "hello",
      mentioned: false,
      eventId: `${alice.id}:${m.message_id}`,
      messageId: String(m.message_id),
      occurredAt: new Date(m.date * 1000),
      replyTo: { platform: "telegram", botId: bot.id, chatId: String(alice.id), replyToMessageId: String(m.message_id) },
      channel: `telegram:${bot.id}:dm:${alice.id}`,
    });
  });

  it("basic groups and supergroups are groups with their title; a reply chain in a plain supergroup stays the group", () => {
    const g = tg.group("Friends", -4001);
    const env = must(tg.build.message({ chat: g, from: alice, text: "hi all" }));
    expect(env).toMatchObject({ chatKind: "group", chatId: "-4001", chatTitle: "Friends", channel: `telegram:${bot.id}:group:-4001` });
    expect(env.threadId).toBeUndefined();

    const sg = tg.supergroup("Big", { id: -1001234 });
    const s = must(tg.build.message({ chat: sg, from: alice, text: "x", threadId: 3 }));
    expect(s).toMatchObject({ chatKind: "group", chatId: "-1001234", chatTitle: "Big" });
    expect(s.threadId).toBeUndefined();
    expect(s.replyTo.threadId).toBeUndefined();
  });

  it("a forum topic message is a thread: external thread id <chat>:topic:<id>, reply goes to message_thread_id", () => {
    const forum = tg.supergroup("Forum", { forum: true, id: -1009 });
    // The bot opened the topic: plain topic messages "reply" to its first message, which is not a reply to the bot.
    const topic = tg.forumTopic(forum, "Ideas", tg.botUser);
    const u = tg.build.message({ chat: forum, from: alice, text: "in a topic", threadId: topic });
    const env = must(u);
    expect(env).toMatchObject({
      chatKind: "thread",
      chatId: "-1009",
      threadId: `-1009:topic:${topic}`,
      mentioned: false,
      channel: `telegram:${bot.id}:group:-1009:topic:${topic}`,
      replyTo: { chatId: "-1009", threadId: String(topic), replyToMessageId: String(u.message!.message_id) },
    });
    // The General topic carries no thread id: it is the group itself.
    expect(must(tg.build.message({ chat: forum, from: alice, text: "general" })).chatKind).toBe("group");
  });

  it("mentioned: @bot mention entity (any case), text_mention of the bot, not someone else", () => {
    const g = tg.group("G", -4002);
    expect(must(tg.build.mention({ chat: g, from: alice, text: "what's up" })).mentioned).toBe(true);
    const upper = `@${bot.username!.toUpperCase()} hi`;
    expect(must(tg.build.message({ chat: g, from: alice, text: upper })).mentioned).toBe(true);
    expect(must(tg.build.message({ chat: g, from: alice, text: "@someone_else hi" })).mentioned).toBe(false);
    // The bot's handle typed without a mention entity (e.g. inside code) does not count.
    expect(must(tg.build.message({ chat: g, from: alice, text: `\`@${bot.username}\``, entities: [{ type: "code", offset: 0, length: 22 }] })).mentioned).toBe(
      false,
    );
    const tm = tg.build.message({ chat: g, from: alice, text: "Bot, help", entities: [{ type: "text_mention", offset: 0, length: 3, user: tg.botUser }] });
    expect(must(tm).mentioned).toBe(true);
    const other = tg.build.message({ chat: g, from: alice, text: "Bob, help", entities: [{ type: "text_mention", offset: 0, length: 3, user: alice }] });
    expect(must(other).mentioned).toBe(false);
  });

  it("mentioned: a reply to one of the bot's messages, not to a person's", () => {
    const g = tg.group("G", -4003);
    expect(must(tg.build.message({ chat: g, from: alice, text: "yes", replyTo: botMessage(g) })).mentioned).toBe(true);
    const mine = tg.build.message({ chat: g, from: alice, text: "first" }).message!;
    expect(must(tg.build.message({ chat: g, from: alice, text: "second", replyTo: mine })).mentioned).toBe(false);
  });

  it("commands: /cmd@bot is addressed to us, /cmd@other is not (even as a reply to us), bare /cmd is not a mention", () => {
    const g = tg.group("G", -4004);
    const ours = must(tg.build.command({ chat: g, from: alice, command: "new", addressed: true }));
    expect(ours).toMatchObject({ text: `/new@${bot.username}`, mentioned: true });
    const other = must(tg.build.message({ chat: g, from: alice, text: "/new@other_bot" }));
    expect(other.mentioned).toBe(false);
    expect(must(tg.build.message({ chat: g, from: alice, text: "/new@other_bot", replyTo: botMessage(g, 901) })).mentioned).toBe(false);
    const bare = must(tg.build.command({ chat: g, from: alice, command: "new", args: "please" }));
    expect(bare).toMatchObject({ text: "/new please", mentioned: false });
  });

  it("an edit is a change of the earlier message, one event per edit", () => {
    const chat = tg.privateChat(alice);
    const first = tg.build.message({ chat, from: alice, text: "v1" });
    const original = must(first);
    const m = first.message!;
    const edit = must(tg.build.edit(m, "v2"));
    expect(edit).toMatchObject({ text: "v2", messageId: original.messageId, chatId: original.chatId, change: { kind: "edit", messageId: original.messageId } });
    expect(edit.eventId).not.toBe(original.eventId);
    expect(original.change).toBeUndefined();
  });

  it("channel posts, callback queries, service messages and unknown update types start no turn", () => {
    const chat = tg.privateChat(alice);
    const m = tg.build.message({ chat, from: alice, text: "v1" }).message!;
    const channel = { id: -1005, type: "channel" as const, title: "News" };
    expect(norm({ update_id: 1, channel_post: { message_id: 1, chat: channel, date: 1, text: "post" } })).toBeUndefined();
    // A channel's message that somehow arrives as `message` is still not a conversation.
    expect(norm({ update_id: 1, message: { message_id: 1, chat: channel, date: 1, text: "post", from: alice } })).toBeUndefined();
    expect(norm(tg.build.callbackQuery({ from: alice, message: m, data: "x" }))).toBeUndefined();
    const g = tg.group("G", -4005);
    expect(norm(tg.build.message({ chat: g, from: alice, extra: { new_chat_members: [alice] } }))).toBeUndefined();
    expect(norm({ update_id: 2, poll: { id: "1", question: "?", options: [] } })).toBeUndefined();
    expect(norm({ update_id: 3, some_future_update: { message_id: 1 } })).toBeUndefined();
  });

  it("media become attachments with file id and metadata; the caption is the text", () => {
    const chat = tg.privateChat(alice);
    const photo = must(tg.build.photo({ chat, from: alice, caption: `look @${bot.username}`, width: 800, height: 600 }));
    expect(photo.text).toBe(`look @${bot.username}`);
    expect(photo.mentioned).toBe(true);
    expect(photo.attachments).toHaveLength(1);
    // The largest size, not the thumbnail.
    expect(photo.attachments![0]).toMatchObject({ kind: "photo", width: 800, height: 600 });

    const doc = must(tg.build.document({ chat, from: alice, fileName: "notes.md", mimeType: "text/markdown", data: Buffer.from("# hi") }));
    expect(doc.text).toBe("");
    expect(doc.attachments).toEqual([{ kind: "document", fileId: expect.stringMatching(/^FAKEFILE/), name: "notes.md", mimeType: "text/markdown", size: 4 }]);

    const voice = must(tg.build.voice({ chat, from: alice, duration: 7 }));
    expect(voice.attachments![0]).toMatchObject({ kind: "voice", durationSec: 7, mimeType: "audio/ogg" });

    const extra = {
      audio: { file_id: "A1", file_unique_id: "a", duration: 180, mime_type: "audio/mpeg", file_name: "song.mp3", file_size: 1000 },
      video: { file_id: "V1", file_unique_id: "v", width: 640, height: 480, duration: 12 },
      sticker: { file_id: "S1", file_unique_id: "s", width: 512, height: 512, emoji: "🙂", is_animated: false, is_video: false, type: "regular" },
    };
    const many = must(tg.build.message({ chat, from: alice, extra }));
    expect(many.attachments).toEqual([
      { kind: "audio", fileId: "A1", name: "song.mp3", mimeType: "audio/mpeg", size: 1000, durationSec: 180 },
      { kind: "video", fileId: "V1", width: 640, height: 480, durationSec: 12 },
      { kind: "sticker", fileId: "S1", name: "🙂", width: 512, height: 512 },
    ]);
  });

  it("senders: the bot's own messages are dropped, other bots are flagged, anonymous admins are the chat", () => {
    const g = tg.group("G", -4006);
    expect(norm(tg.build.message({ chat: g, from: tg.botUser, text: "echo" }))).toBeUndefined();
    const other: TgUser = { id: 555, is_bot: true, first_name: "Other", username: "other_bot" };
    expect(must(tg.build.message({ chat: g, from: other, text: "beep" }))).toMatchObject({ senderId: "555", senderIsBot: true, senderName: "Other" });
    expect(must(tg.build.message({ chat: g, from: alice, text: "hi" })).senderIsBot).toBeUndefined();
    const anon: TgUser = { id: 1087968824, is_bot: true, first_name: "Group", username: "GroupAnonymousBot" };
    const env = must(tg.build.message({ chat: g, from: anon, text: "as admin", extra: { sender_chat: { id: -4006, type: "group", title: "G" } } }));
    expect(env).toMatchObject({ senderId: "-4006", senderName: "G" });
    expect(env.senderIsBot).toBeUndefined();
  });

  it("malformed updates give undefined, never an exception", () => {
    for (const bad of [
      null,
      undefined,
      1,
      "x",
      [],
      {},
      { message: null },
      { message: [] },
      { message: { chat: {} } },
      { message: { message_id: 1, chat: { id: 1, type: "private" }, date: 1 } },
    ])
      expect(norm(bad as Record<string, unknown>)).toBeUndefined();
    // Entities pointing outside the text are ignored.
    const chat = tg.privateChat(alice);
    const u = tg.build.message({ chat, from: alice, text: "hi", entities: [{ type: "mention", offset: 1, length: 400 }] });
    expect(must(u).mentioned).toBe(false);
  });
});
