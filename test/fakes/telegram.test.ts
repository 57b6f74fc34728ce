/**
 * FakeTelegram driven by the real grammY SDK (Bot with client.apiRoot).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { autoRetry } from "@grammyjs/auto-retry";
import { Bot, GrammyError, webhookCallback } from "grammy";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FakeTelegram, type TgUser } from "./telegram.js";

let tg: FakeTelegram;
let bot: Bot | undefined;
let polling: Promise<void> | undefined;
let servers: http.Server[] = [];
let errors: unknown[] = [];

beforeEach(async () => {
  tg = new FakeTelegram();
  await tg.start();
  errors = [];
});

afterEach(async () => {
  if (bot?.isRunning()) await bot.stop();
  await polling;
  bot = undefined;
  polling = undefined;
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
  servers = [];
  await tg.close();
});

const newBot = (): Bot => new Bot(tg.token, { client: { apiRoot: tg.apiRoot } });

/** Creates the bot, lets `setup` register handlers, starts long polling and waits for the first getUpdates. */
async function startBot(setup: (b: Bot) => void, configure?: (b: Bot) => void): Promise<Bot> {
  const b = newBot();
  configure?.(b);
  setup(b);
  b.catch((e) => errors.push(e.error));
  bot = b;
  polling = b.start({ timeout: 10 });
  await tg.waitFor(() => tg.callsTo("getUpdates").length > 0);
  return b;
}

describe("FakeTelegram with grammY", () => {
  let alice: TgUser;
  let bob: TgUser;
  beforeEach(() => {
    alice = tg.user("Alice");
    bob = tg.user("Bob");
  });

  it("delivers DM, group, supergroup and forum-topic messages and records replies with chat type and thread", async () => {
    await startBot((b) =>
      b.on("message:text", async (ctx) => {
        await ctx.replyWithChatAction("typing");
        await ctx.reply(`echo[${ctx.chat.type}] ${ctx.msg.text}`, { reply_parameters: { message_id: ctx.msg.message_id } });
      }),
    );
    const dm = tg.privateChat(alice);
    const group = tg.group("Team");
    const sup = tg.supergroup("Big team");
    const forum = tg.supergroup("Forum", { forum: true });
    const topic = tg.forumTopic(forum, "Support", bob);

    const u1 = tg.userMessage({ chat: dm, from: alice, text: "hi dm" });
    const u2 = tg.userMessage({ chat: group, from: bob, text: "hi group" });
    const u3 = tg.userMessage({ chat: sup, from: bob, text: "hi supergroup" });
    const u4 = tg.userMessage({ chat: forum, from: bob, text: "hi topic", threadId: topic });
    await tg.waitFor(() => tg.sent().length === 4);

    const byChat = (id: number) => tg.sent({ chatId: id })[0]!;
    expect(byChat(dm.id)).toMatchObject({ chatType: "private", text: "echo[private] hi dm", replyToMessageId: u1.message!.message_id });
    expect(byChat(group.id)).toMatchObject({ chatType: "group", text: "echo[group] hi group", replyToMessageId: u2.message!.message_id });
    expect(byChat(sup.id)).toMatchObject({ chatType: "supergroup", replyToMessageId: u3.message!.message_id });
    // grammY's ctx.reply copies message_thread_id for topic messages; the fake keeps it.
    expect(byChat(forum.id)).toMatchObject({ chatType: "supergroup", threadId: topic, replyToMessageId: u4.message!.message_id });
    expect(byChat(forum.id).message).toMatchObject({ is_topic_message: true, message_thread_id: topic, chat: { is_forum: true } });
    expect(u4.message).toMatchObject({ is_topic_message: true, message_thread_id: topic, reply_to_message: { forum_topic_created: { name: "Support" } } });
    expect(tg.callsTo("sendChatAction").map((c) => c.status)).toEqual([200, 200, 200, 200]);
    expect(errors).toEqual([]);
  });

  it("long polling holds the request, honours offset and limit, and grammY confirms on stop", async () => {
    const api = newBot().api;
    const chat = tg.privateChat(alice);

    // Held: nothing queued, timeout 5 s -> answers as soon as an update arrives.
    const t0 = Date.now();
    let settled = false;
    const held = api.getUpdates({ timeout: 5 }).finally(() => (settled = true));
    await new Promise((r) => setTimeout(r, 200));
    expect(settled).toBe(false);
    const first = tg.userMessage({ chat, from: alice, text: "one" });
    const got = await held;
    expect(got.map((u) => u.update_id)).toEqual([first.update_id]);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(190);
    expect(Date.now() - t0).toBeLessThan(2000);

    // Not confirmed yet: still pending until an offset above it is sent.
    expect(tg.pending().map((u) => u.update_id)).toEqual([first.update_id]);
    const second = tg.userMessage({ chat, from: alice, text: "two" });
    const third = tg.userMessage({ chat, from: alice, text: "three" });
    const batch = await api.getUpdates({ offset: first.update_id + 1, limit: 1 });
    expect(batch.map((u) => u.update_id)).toEqual([second.update_id]);
    expect(tg.pending().map((u) => u.update_id)).toEqual([second.update_id, third.update_id]);

    // Timeout honoured with nothing to deliver.
    const t1 = Date.now();
    expect(await api.getUpdates({ offset: third.update_id + 1, timeout: 1 })).toEqual([]);
    expect(Date.now() - t1).toBeGreaterThanOrEqual(900);
    expect(tg.pending()).toEqual([]);

    // The real polling loop: updates queued before start are handled in order and confirmed.
    const texts: string[] = [];
    const a = tg.userMessage({ chat, from: alice, text: "a" });
    tg.userMessage({ chat, from: alice, text: "b" });
    const b = await startBot((bb) => bb.on("message:text", (ctx) => void texts.push(ctx.msg.text)));
    await tg.waitFor(() => texts.length === 2);
    expect(texts).toEqual(["a", "b"]);
    await b.stop(); // grammY confirms what it handled when it stops (or on its next poll, whichever comes first)
    expect(tg.callsTo("getUpdates").find((c) => c.params.offset === a.update_id + 2)).toBeDefined();
    expect(tg.pending()).toEqual([]);
  });

  it("commands and @mentions carry the entities grammY matches on", async () => {
    const seen: string[] = [];
    await startBot((b) => {
      b.command("new", (ctx) => void seen.push(`new:${ctx.chat.type}:${ctx.match}`));
      b.on("message:entities:mention", (ctx) => void seen.push(`mention:${ctx.entities("mention")[0]?.text}`));
    });
    const dm = tg.privateChat(alice);
    const group = tg.group("Team");
    tg.command({ chat: dm, from: alice, command: "new" });
    tg.command({ chat: group, from: bob, command: "new", args: "topic", addressed: true });
    tg.userMessage({ chat: group, from: bob, text: "/new@some_other_bot ignored" });
    tg.mention({ chat: group, from: bob, text: "hello there" });
    await tg.waitFor(() => tg.pending().length === 0 && seen.length >= 3);
    expect(seen).toEqual(["new:private:", "new:group:topic", "mention:@switchboard_test_bot"]);
  });

  it("delivers replies to the bot, edited messages and media, and serves files via getFile", async () => {
    const seen: Record<string, unknown>[] = [];
    let photoBytes = "";
    await startBot((b) => {
      b.on("message:text", async (ctx) => {
        const r = ctx.msg.reply_to_message;
        seen.push({ text: ctx.msg.text, replyToBot: r?.from?.id === ctx.me.id, replyTo: r?.message_id });
        if (ctx.msg.text === "start") await ctx.reply("bot says hi");
      });
      b.on("edited_message:text", (ctx) => void seen.push({ edited: ctx.editedMessage.text }));
      b.on("message:photo", async (ctx) => {
        const file = await ctx.getFile();
        const res = await fetch(`${tg.apiRoot}/file/bot${tg.token}/${file.file_path}`);
        photoBytes = await res.text();
        seen.push({ photo: ctx.msg.photo.length, caption: ctx.msg.caption });
      });
      b.on("message:document", (ctx) => void seen.push({ doc: ctx.msg.document.file_name }));
      b.on("message:voice", (ctx) => void seen.push({ voice: ctx.msg.voice.duration }));
    });
    const chat = tg.privateChat(alice);
    const start = tg.userMessage({ chat, from: alice, text: "start" });
    const botMsg = await tg.waitFor(() => tg.sent()[0]);
    tg.userMessage({ chat, from: alice, text: "answering you", replyTo: botMsg.messageId });
    tg.editMessage(start.message!, "start (edited)");
    tg.photo({ chat, from: alice, caption: "look", data: Buffer.from("PHOTO-BYTES") });
    tg.document({ chat, from: alice, fileName: "notes.md" });
    tg.voice({ chat, from: alice, duration: 7 });
    await tg.waitFor(() => seen.length === 6);
    expect(seen).toEqual([
      { text: "start", replyToBot: false, replyTo: undefined },
      { text: "answering you", replyToBot: true, replyTo: botMsg.messageId },
      { edited: "start (edited)" },
      { photo: 2, caption: "look" },
      { doc: "notes.md" },
      { voice: 7 },
    ]);
    expect(photoBytes).toBe("PHOTO-BYTES");
  });

  it("429 is honoured by grammY's polling loop and by @grammyjs/auto-retry; 500 surfaces as GrammyError", async () => {
    tg.rateLimitNext("getUpdates", 1);
    tg.rateLimitNext("sendMessage", 1);
    await startBot(
      (b) => b.on("message:text", (ctx) => ctx.reply(`ok ${ctx.msg.text}`)),
      (b) => b.api.config.use(autoRetry({ maxRetryAttempts: 2, maxDelaySeconds: 5 })),
    );
    const chat = tg.privateChat(alice);
    tg.userMessage({ chat, from: alice, text: "x" });
    await tg.waitFor(() => tg.sent()[0], 6000);

    const polls = tg.callsTo("getUpdates");
    expect(polls[0]!.status).toBe(429);
    expect(polls[0]!.error).toBe("Too Many Requests: retry after 1");
    expect(polls[1]!.at - polls[0]!.at).toBeGreaterThanOrEqual(950);
    const sends = tg.callsTo("sendMessage");
    expect(sends.map((c) => c.status)).toEqual([429, 200]);
    expect(sends[1]!.at - sends[0]!.at).toBeGreaterThanOrEqual(950);
    expect(tg.sent().map((s) => s.text)).toEqual(["ok x"]);

    tg.failNext("sendMessage", { status: 500 });
    const err = await newBot()
      .api.sendMessage(chat.id, "boom")
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GrammyError);
    expect((err as GrammyError).error_code).toBe(500);
  });

  it("answers like Telegram for parse_mode, edits, chat actions, commands and unknown methods", async () => {
    const api = newBot().api;
    const chat = tg.privateChat(alice);
    tg.userMessage({ chat, from: alice, text: "hello" });

    const html = await api.sendMessage(chat.id, '<b>bold</b> &amp; <a href="https://x.test">link</a>', { parse_mode: "HTML" });
    expect(html.text).toBe("bold & link");
    expect(html.entities).toEqual([
      { type: "bold", offset: 0, length: 4 },
      { type: "text_link", offset: 7, length: 4, url: "https://x.test" },
    ]);
    const md = await api.sendMessage(chat.id, "*hi* there\\.", { parse_mode: "MarkdownV2" });
    expect(md.text).toBe("hi there.");
    const bad = await api.sendMessage(chat.id, "Done. 1-2", { parse_mode: "MarkdownV2" }).catch((e: unknown) => e);
    expect((bad as GrammyError).description).toBe("Bad Request: can't parse entities: Character '.' is reserved and must be escaped with the preceding '\\'");
    const badHtml = await api.sendMessage(chat.id, "<b>open", { parse_mode: "HTML" }).catch((e: unknown) => e);
    expect((badHtml as GrammyError).description).toMatch(/Can't find end tag corresponding to start tag "b"/);
    const long = await api.sendMessage(chat.id, "x".repeat(4097)).catch((e: unknown) => e);
    expect((long as GrammyError).description).toBe("Bad Request: message is too long");

    const edited = await api.editMessageText(chat.id, md.message_id, "new text");
    expect(edited).toMatchObject({ text: "new text", edit_date: expect.any(Number) });
    const same = await api.editMessageText(chat.id, md.message_id, "new text").catch((e: unknown) => e);
    expect((same as GrammyError).description).toMatch(/^Bad Request: message is not modified/);
    expect(tg.sent().find((s) => s.messageId === md.message_id)!.history).toEqual(["*hi* there\\.", "new text"]);

    expect(await api.sendChatAction(chat.id, "typing")).toBe(true);
    const badAction = await api.sendChatAction(chat.id, "dancing" as "typing").catch((e: unknown) => e);
    expect((badAction as GrammyError).error_code).toBe(400);
    const noChat = await api.sendMessage(424242, "hi").catch((e: unknown) => e);
    expect((noChat as GrammyError).description).toBe("Bad Request: chat not found");

    await api.setMyCommands([{ command: "new", description: "Start a new session" }]);
    expect(await api.getMyCommands()).toEqual([{ command: "new", description: "Start a new session" }]);
    expect(tg.commands()).toEqual([{ command: "new", description: "Start a new session" }]);
    const badCmd = await api.setMyCommands([{ command: "New-Session", description: "x" }]).catch((e: unknown) => e);
    expect((badCmd as GrammyError).description).toBe("Bad Request: BOT_COMMAND_INVALID");

    const raw = api.raw as unknown as Record<string, (p: object) => Promise<unknown>>;
    const unknown = await raw.noSuchMethod!({}).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(GrammyError);
    expect((unknown as GrammyError).error_code).toBe(404);
    expect((unknown as GrammyError).description).toBe("Not Found");
  });

  it("delivers arbitrary raw updates and filters by allowed_updates like Telegram", async () => {
    const api = newBot().api;
    const chat = tg.group("Team");
    const reaction = tg.inject({
      message_reaction: { chat, message_id: 1, user: alice, date: 0, old_reaction: [], new_reaction: [{ type: "emoji", emoji: "👍" }] },
    });
    const member = tg.inject({
      my_chat_member: {
        chat,
        from: alice,
        date: 0,
        old_chat_member: { status: "left", user: tg.botUser },
        new_chat_member: { status: "member", user: tg.botUser },
      },
    });
    // Default allowed_updates leave message_reaction out; asking for it explicitly delivers it.
    expect((await api.getUpdates({ allowed_updates: [] })).map((u) => u.update_id)).toEqual([member.update_id]);
    expect((await api.getUpdates({ allowed_updates: ["message_reaction"] })).map((u) => u.update_id)).toEqual([reaction.update_id]);
    // Telegram remembers the last allowed_updates when the parameter is omitted.
    expect((await api.getUpdates()).map((u) => u.update_id)).toEqual([reaction.update_id]);
    await api.getUpdates({ offset: member.update_id + 1, allowed_updates: [] });

    const joined: string[] = [];
    await startBot((b) => b.on("my_chat_member", (ctx) => void joined.push(ctx.myChatMember.new_chat_member.status)));
    tg.inject({
      my_chat_member: {
        chat,
        from: alice,
        date: 0,
        old_chat_member: { status: "member", user: tg.botUser },
        new_chat_member: { status: "administrator", user: tg.botUser },
      },
    });
    await tg.waitFor(() => joined.length === 1);
    expect(joined).toEqual(["administrator"]);
  });

  it("answers callback queries from inline keyboards", async () => {
    await startBot((b) => {
      b.command("ask", (ctx) => ctx.reply("Sure?", { reply_markup: { inline_keyboard: [[{ text: "Yes", callback_data: "yes" }]] } }));
      b.on("callback_query:data", async (ctx) => {
        await ctx.answerCallbackQuery({ text: `got ${ctx.callbackQuery.data}` });
        await ctx.editMessageText("Confirmed");
      });
    });
    const chat = tg.privateChat(alice);
    tg.command({ chat, from: alice, command: "ask" });
    const prompt = await tg.waitFor(() => tg.sent()[0]);
    expect(prompt.replyMarkup).toEqual({ inline_keyboard: [[{ text: "Yes", callback_data: "yes" }]] });
    const cq = tg.callbackQuery({ from: alice, message: prompt.message, data: "yes" });
    await tg.waitFor(() => prompt.text === "Confirmed");
    expect(tg.callbackAnswer(cq.callback_query!.id)).toMatchObject({ text: "got yes" });
  });

  it("webhook mode: secret token header, setWebhook pushes updates, getUpdates conflicts", async () => {
    const b = newBot();
    b.on("message:text", (ctx) => ctx.reply(`hook ${ctx.msg.text}`));
    const server = http.createServer(webhookCallback(b, "http", { secretToken: "s3cret" }));
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const hookUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/tg`;
    const chat = tg.privateChat(alice);

    const ok = await tg.deliverWebhook(hookUrl, tg.build.message({ chat, from: alice, text: "one" }), "s3cret");
    expect(ok.status).toBe(200);
    expect(tg.sent().map((s) => s.text)).toEqual(["hook one"]);
    const wrong = await tg.deliverWebhook(hookUrl, tg.build.message({ chat, from: alice, text: "two" }), "nope");
    expect(wrong.status).toBe(401);
    expect(tg.sent()).toHaveLength(1);

    await b.api.setWebhook(hookUrl, { secret_token: "s3cret" });
    expect(tg.webhook).toMatchObject({ url: hookUrl, secret_token: "s3cret" });
    const three = tg.userMessage({ chat, from: alice, text: "three" });
    const delivery = await tg.waitFor(() => tg.webhookDeliveries().find((d) => d.updateId === three.update_id));
    expect(delivery).toMatchObject({ status: 200, url: hookUrl });
    expect(tg.sent().map((s) => s.text)).toEqual(["hook one", "hook three"]);
    const conflict = await b.api.getUpdates().catch((e: unknown) => e);
    expect((conflict as GrammyError).error_code).toBe(409);
    await b.api.deleteWebhook();
    expect(tg.webhook).toBeNull();
  });

  it("webhookRetry: an update answered 5xx is delivered again before the next one", async () => {
    const retrying = new FakeTelegram({ webhookRetry: { attempts: 3, delayMs: 20 } });
    await retrying.start();
    const seen: Array<{ id: number; status: number }> = [];
    let failures = 2;
    const server = http.createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        const status = failures-- > 0 ? 500 : 200;
        seen.push({ id: (JSON.parse(body) as { update_id: number }).update_id, status });
        res.writeHead(status).end();
      });
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      await fetch(`${retrying.apiUrl}/setWebhook`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/tg` }),
      });
      const user = retrying.user("Carol");
      const chat = retrying.privateChat(user);
      const first = retrying.userMessage({ chat, from: user, text: "first" });
      const second = retrying.userMessage({ chat, from: user, text: "second" });
      await retrying.waitFor(() => seen.length === 4);
      expect(seen).toEqual([
        { id: first.update_id, status: 500 },
        { id: first.update_id, status: 500 },
        { id: first.update_id, status: 200 },
        { id: second.update_id, status: 200 },
      ]);
    } finally {
      await retrying.close();
    }
  });
});

describe("FakeTelegram leaveChat", () => {
  it("the bot leaves a group: True, then the chat answers 403 'bot is not a member'; a private chat cannot be left", async () => {
    const b = newBot();
    const group = tg.supergroup("Strangers");
    expect(await b.api.sendMessage(group.id, "before")).toMatchObject({ text: "before" });
    expect(await b.api.leaveChat(group.id)).toBe(true);
    expect(tg.hasLeft(group.id)).toBe(true);
    expect(tg.callsTo("leaveChat")).toHaveLength(1);
    await expect(b.api.sendMessage(group.id, "after")).rejects.toMatchObject({
      error_code: 403,
      description: "Forbidden: bot is not a member of the supergroup chat",
    });
    await expect(b.api.leaveChat(group.id)).rejects.toMatchObject({ error_code: 403 });
    const dm = tg.privateChat(tg.user("Carol"));
    await expect(b.api.leaveChat(dm.id)).rejects.toBeInstanceOf(GrammyError);
  });
});

describe("FakeTelegram botLimit", () => {
  it("accepts at most perSecond messages in any 1 s window of its clock, answers 429 retry_after beyond, and counts them", async () => {
    let clock = 10_000;
    const limited = new FakeTelegram({ botLimit: { perSecond: 3, now: () => clock } });
    await limited.start();
    try {
      const b = new Bot(limited.token, { client: { apiRoot: limited.apiRoot } });
      const chat = limited.build.privateChat(limited.build.user("Ann"));
      const send = (text: string) => b.api.sendMessage(chat.id, text);
      for (let i = 0; i < 3; i++) await send(`m${i}`);
      // A chat action is not a message: it never counts.
      await b.api.sendChatAction(chat.id, "typing");
      const refused = await send("m3").catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(GrammyError);
      expect((refused as GrammyError).error_code).toBe(429);
      expect((refused as GrammyError).parameters.retry_after).toBe(1);
      clock += 999;
      await expect(send("m4")).rejects.toBeInstanceOf(GrammyError);
      clock += 1;
      await send("m5");
      expect(limited.botLimitRejections).toBe(2);
      expect(limited.sent().map((m) => m.text)).toEqual(["m0", "m1", "m2", "m5"]);
      expect(limited.callsTo("sendMessage").map((c) => [c.at - 10_000, c.status])).toEqual([
        [0, 200],
        [0, 200],
        [0, 200],
        [0, 429],
        [999, 429],
        [1000, 200],
      ]);
    } finally {
      await limited.close();
    }
  });
});
