/**
 * normalize.ts on raw MESSAGE_CREATE / INTERACTION_CREATE data: who counts as
 * addressing the bot, which messages are dropped, and the ids a thread gets.
 * Ends with 10,000 generated gateway payloads: zero throws.
 */
import { describe, expect, it } from "vitest";
import { normalizeInteraction } from "../../../adapters/discord/commands.js";
import { normalizeMessage, type DiscordBotIdentity } from "../../../adapters/discord/normalize.js";

const BOT = "900000000000000001";
const ALICE = "900000000000000002";
const OTHER_BOT = "900000000000000003";
const GUILD = "900000000000000010";
const GENERAL = "900000000000000011";
const THREAD = "900000000000000012";
const DM = "900000000000000013";
const ROLE = "900000000000000020";
const bot: DiscordBotIdentity = { id: BOT };
let seq = 1000n;
const nextId = (): string => String((BigInt(Date.UTC(2025, 0, 1) - 1_420_070_400_000) << 22n) + seq++);

function msg(o: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: nextId(),
    type: 0,
    channel_id: GENERAL,
    guild_id: GUILD,
    author: { id: ALICE, username: "alice", global_name: "Alice", discriminator: "0", avatar: null },
    member: { nick: null, roles: [] },
    content: "hello",
    timestamp: "2025-01-01T00:00:00.000Z",
    mentions: [],
    mention_roles: [],
    mention_everyone: false,
    attachments: [],
    flags: 0,
    ...o,
  };
}

describe("normalizeMessage", () => {
  it("DM: private, channel discord:<bot>:dm:<channel>, reply quotes the message", () => {
    const m = msg({ channel_id: DM, guild_id: undefined, member: undefined, channel_type: 1, content: "hi there" });
    const env = normalizeMessage(m, bot)!;
    expect(env).toMatchObject({
      platform: "discord",
      botId: BOT,
      chatKind: "private",
      chatId: DM,
      senderId: ALICE,
      senderName: "Alice",
      text: "hi there",
      mentioned: false,
      eventId: m.id,
      messageId: m.id,
      channel: `discord:${BOT}:dm:${DM}`,
      replyTo: { platform: "discord", botId: BOT, chatId: DM, replyToMessageId: m.id },
    });
    expect(env.occurredAt.toISOString()).toBe("2025-01-01T00:00:00.000Z");
    expect(env.workspace).toBeUndefined();
  });

  it("a guild's message names the guild as its workspace (per-workspace budgets and metrics, as a Slack team)", () => {
    expect(normalizeMessage(msg({ content: `<@${BOT}> hi` }), bot, { type: 0, name: "general" })).toMatchObject({ workspace: GUILD });
  });

  it("guild mention (<@id>, <@!id> or mentions array) counts and is stripped from the text", () => {
    const a = normalizeMessage(msg({ content: `<@${BOT}> what's up?` }), bot, { type: 0, name: "general" })!;
    expect(a).toMatchObject({
      chatKind: "group",
      chatId: GENERAL,
      mentioned: true,
      text: "what's up?",
      chatTitle: "general",
      channel: `discord:${BOT}:group:${GENERAL}`,
    });
    expect(normalizeMessage(msg({ content: `hey <@!${BOT}> there` }), bot)).toMatchObject({ mentioned: true, text: "hey there" });
    expect(normalizeMessage(msg({ content: "hey", mentions: [{ id: BOT }] }), bot)).toMatchObject({ mentioned: true });
    expect(normalizeMessage(msg({ content: "plain" }), bot)).toMatchObject({ mentioned: false, text: "plain" });
    // Only a mention, no question: nothing to answer.
    expect(normalizeMessage(msg({ content: `<@${BOT}>` }), bot)).toBeUndefined();
  });

  it("a reply to the bot's message counts as a mention", () => {
    const env = normalizeMessage(
      msg({ type: 19, content: "and then?", message_reference: { message_id: "1" }, referenced_message: { id: "1", author: { id: BOT, bot: true } } }),
      bot,
    );
    expect(env?.mentioned).toBe(true);
    const toAlice = normalizeMessage(msg({ type: 19, content: "x", referenced_message: { id: "1", author: { id: ALICE } } }), bot);
    expect(toAlice?.mentioned).toBe(false);
  });

  it("@everyone, @here and role mentions do not count unless the role is configured", () => {
    expect(normalizeMessage(msg({ content: "@everyone look", mention_everyone: true }), bot)?.mentioned).toBe(false);
    expect(normalizeMessage(msg({ content: "@here look", mention_everyone: true }), bot)?.mentioned).toBe(false);
    const roleMsg = (): Record<string, unknown> => msg({ content: `<@&${ROLE}> deploy?`, mention_roles: [ROLE] });
    expect(normalizeMessage(roleMsg(), bot)?.mentioned).toBe(false);
    expect(normalizeMessage(roleMsg(), { id: BOT, mentionRoles: ["900000000000000099"] })?.mentioned).toBe(false);
    expect(normalizeMessage(roleMsg(), { id: BOT, mentionRoles: [ROLE] })).toMatchObject({ mentioned: true, text: "deploy?" });
  });

  it("ignores the bot's own messages, other bots and webhooks unless allowBots", () => {
    expect(normalizeMessage(msg({ author: { id: BOT, username: "me", bot: true } }), bot)).toBeUndefined();
    const other = (): Record<string, unknown> => msg({ author: { id: OTHER_BOT, username: "other", bot: true } });
    expect(normalizeMessage(other(), bot)).toBeUndefined();
    expect(normalizeMessage(msg({ webhook_id: "5" }), bot)).toBeUndefined();
    // Admitted, it is a sender as any other: the gateway ignores whatever is marked senderIsBot.
    const admitted = normalizeMessage(other(), { id: BOT, allowBots: true });
    expect(admitted).toMatchObject({ senderId: OTHER_BOT });
    expect(admitted?.senderIsBot).toBeUndefined();
    // Even with allowBots, never its own.
    expect(normalizeMessage(msg({ author: { id: BOT, bot: true } }), { id: BOT, allowBots: true })).toBeUndefined();
  });

  it("thread: chatKind thread, chatId = parent, threadId = thread; the reply goes into the thread", () => {
    const m = msg({ channel_id: THREAD, content: "in thread" });
    const env = normalizeMessage(m, bot, { type: 11, parentId: GENERAL, name: "help" })!;
    expect(env).toMatchObject({
      chatKind: "thread",
      chatId: GENERAL,
      threadId: THREAD,
      channel: `discord:${BOT}:group:${GENERAL}:thread:${THREAD}`,
      replyTo: { chatId: THREAD, threadId: THREAD, replyToMessageId: m.id },
    });
  });

  it("attachments become envelope attachments; system messages and other types are skipped", () => {
    const env = normalizeMessage(
      msg({
        content: "",
        attachments: [
          { id: "1", filename: "cat.png", content_type: "image/png", size: 10, url: "https://cdn/cat.png", width: 5, height: 6 },
          { id: "2", filename: "voice.ogg", content_type: "audio/ogg", size: 3, url: "https://cdn/v.ogg", duration_secs: 2.5, waveform: "AA" },
          { id: "3", filename: "a.pdf", url: "https://cdn/a.pdf" },
        ],
      }),
      bot,
    )!;
    expect(env.text).toBe("");
    expect(env.attachments).toEqual([
      { kind: "photo", fileId: "https://cdn/cat.png", name: "cat.png", mimeType: "image/png", size: 10, width: 5, height: 6 },
      { kind: "voice", fileId: "https://cdn/v.ogg", name: "voice.ogg", mimeType: "audio/ogg", size: 3, durationSec: 2.5 },
      { kind: "document", fileId: "https://cdn/a.pdf", name: "a.pdf" },
    ]);
    expect(normalizeMessage(msg({ type: 7 }), bot)).toBeUndefined(); // member join
    expect(normalizeMessage(msg({ type: 18 }), bot)).toBeUndefined(); // thread created
  });

  it("occurredAt falls back to the snowflake when the timestamp is missing", () => {
    const env = normalizeMessage(msg({ id: "175928847299117063", timestamp: undefined }), bot)!;
    expect(env.occurredAt.toISOString()).toBe("2016-04-30T11:18:25.796Z");
  });
});

describe("normalizeInteraction", () => {
  const interaction = (o: Record<string, unknown> = {}): Record<string, unknown> => ({
    id: nextId(),
    application_id: BOT,
    type: 2,
    token: "tok-en_1.x",
    channel_id: DM,
    channel: { id: DM, type: 1 },
    user: { id: ALICE, username: "alice", global_name: null },
    data: { id: "5", name: "new", type: 1 },
    ...o,
  });

  it("a slash command becomes '/name args', mentioned, eventId = interaction id, reply via the interaction", () => {
    const raw = interaction({ data: { id: "5", name: "new", type: 1, options: [{ name: "args", type: 3, value: "my project" }] } });
    const i = normalizeInteraction(raw, bot)!;
    expect(i.env).toMatchObject({
      chatKind: "private",
      chatId: DM,
      text: "/new my project",
      mentioned: true,
      eventId: raw.id,
      senderName: "alice",
      replyTo: { chatId: DM, extra: { interactionToken: "tok-en_1.x", applicationId: BOT } },
    });
    expect(i.env.replyTo.replyToMessageId).toBeUndefined();
  });

  it("guild thread interactions get thread ids; buttons and autocomplete are not commands", () => {
    const raw = interaction({
      guild_id: GUILD,
      channel_id: THREAD,
      channel: { id: THREAD, type: 11, parent_id: GENERAL },
      user: undefined,
      member: { nick: "Al", user: { id: ALICE, username: "alice" } },
    });
    expect(normalizeInteraction(raw, bot)?.env).toMatchObject({ chatKind: "thread", chatId: GENERAL, threadId: THREAD, senderName: "Al", text: "/new" });
    expect(normalizeInteraction(interaction({ type: 3 }), bot)).toBeUndefined();
    expect(normalizeInteraction(interaction({ type: 4 }), bot)).toBeUndefined();
    // Found by the fuzz: an interaction "from" the bot itself, or from another bot, is not a turn.
    expect(normalizeInteraction(interaction({ user: { id: BOT, username: "me" } }), bot)).toBeUndefined();
    expect(normalizeInteraction(interaction({ user: { id: OTHER_BOT, username: "o", bot: true } }), bot)).toBeUndefined();
  });
});
