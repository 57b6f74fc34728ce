/**
 * The sink with the real grammY Api against FakeTelegram: rendering,
 * addressing, and the mapping of every failure to an AdapterError the
 * gateway's scheduler can act on, with exactly one call per attempt (no
 * retries hidden in the adapter).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { normalizeUpdate } from "../../../adapters/telegram/normalize.js";
import type { TelegramAdapter } from "../../../adapters/telegram/index.js";
import { AdapterError, type ReplyAddress } from "../../../adapters/types.js";
import { renderTelegramHtml } from "../../../adapters/telegram/format.js";
import { FakeTelegram, type TgChat, type TgUser } from "../../fakes/telegram.js";
import { newAdapter } from "./helpers.js";

let tg: FakeTelegram;
let adapter: TelegramAdapter;
let alice: TgUser;
let dm: TgChat;
let to: ReplyAddress;

beforeEach(async () => {
  tg = new FakeTelegram();
  await tg.start();
  // The sink works before start(): the bot id comes from the token prefix.
  adapter = newAdapter(tg);
  alice = tg.user("Alice");
  dm = tg.privateChat(alice);
  to = { platform: "telegram", botId: String(tg.botUser.id), chatId: String(dm.id) };
});

afterEach(async () => {
  await adapter.stop();
  await tg.close();
});

async function rejection(p: Promise<unknown>): Promise<AdapterError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(AdapterError);
    const err = e as AdapterError;
    expect(err.platform).toBe("telegram");
    expect(err.message).not.toContain(tg.token);
    return err;
  }
  throw new Error("expected the call to reject");
}

describe("TelegramAdapter sink", () => {
  it("sends a chunk the format rendered to Telegram HTML, user text escaped, with parse_mode HTML", async () => {
    const md = 'Use **bold** and `a<b && c>"d"` then <script>alert(1)</script> & [x](https://example.com)';
    const sent = await adapter.sink.send(to, adapter.format.chunks(md)[0]!);
    const [msg] = tg.sent({ chatId: dm.id });
    expect(msg).toBeDefined();
    expect(sent.messageId).toBe(String(msg!.messageId));
    expect(msg!.parseMode).toBe("HTML");
    expect(msg!.rawText).toBe(renderTelegramHtml(md));
    expect(msg!.rawText).not.toContain("<script>");
    // What the user sees: the tags became entities, the user's < > & " are literal.
    expect(msg!.text).toContain('a<b && c>"d"');
    expect(msg!.text).toContain("<script>alert(1)</script> & x");
    expect(msg!.entities.map((e) => e.type)).toEqual(expect.arrayContaining(["bold", "code", "text_link"]));
  });

  it("text over 4096 characters and broken entities are refused by the fake as by Telegram, marked too-long and bad-format", async () => {
    expect(await rejection(adapter.sink.send(to, "x".repeat(4097)))).toMatchObject({ code: "Rejected", reason: "too-long" });
    expect(await rejection(adapter.sink.send(to, "<b>unclosed"))).toMatchObject({ code: "Rejected", reason: "bad-format" });
    // The same chunk as plain text (the gateway's fallback) goes through, shown as typed.
    await adapter.sink.send(to, "<b>unclosed", { plain: true });
    const last = tg.sent({ chatId: dm.id }).at(-1)!;
    expect(last.text).toBe("<b>unclosed");
    expect(last.parseMode).toBeUndefined();
  });

  it("quotes the user's message on the first chunk, and still sends when it was deleted", async () => {
    const u = tg.userMessage({ chat: dm, from: alice, text: "question" });
    await adapter.sink.send({ ...to, replyToMessageId: String(u.message!.message_id) }, "answer");
    expect(tg.sent()[0]!.replyToMessageId).toBe(u.message!.message_id);
    const params = tg.callsTo("sendMessage")[0]!.params;
    expect(params.reply_parameters).toEqual({ message_id: u.message!.message_id, allow_sending_without_reply: true });

    await adapter.sink.send({ ...to, replyToMessageId: "99999" }, "answer to a deleted message");
    expect(tg.sent()).toHaveLength(2);
    expect(tg.sent()[1]!.replyToMessageId).toBeUndefined();
    // Later chunks carry no replyToMessageId: no reply_parameters.
    await adapter.sink.send(to, "second chunk");
    expect(tg.callsTo("sendMessage")[2]!.params.reply_parameters).toBeUndefined();
  });

  it("answers into the forum topic the message came from", async () => {
    const forum = tg.supergroup("Forum", { forum: true });
    const topic = tg.forumTopic(forum, "Ideas");
    const u = tg.userMessage({ chat: forum, from: alice, text: "in topic", threadId: topic });
    const env = normalizeUpdate(u, { id: adapter.botId, username: tg.botUser.username! })!;
    await adapter.sink.send(env.replyTo, "topic answer");
    await adapter.sink.typing(env.replyTo);
    expect(tg.sent({ chatId: forum.id, threadId: topic })).toHaveLength(1);
    expect(tg.callsTo("sendChatAction")[0]!.params).toMatchObject({ action: "typing", message_thread_id: topic });
  });

  it("429 becomes RateLimited with retryAfterMs = retry_after * 1000, after exactly one call", async () => {
    tg.rateLimitNext("sendMessage", 3);
    const err = await rejection(adapter.sink.send(to, "hi"));
    expect(err.code).toBe("RateLimited");
    expect(err.retryAfterMs).toBe(3000);
    expect(tg.callsTo("sendMessage")).toHaveLength(1);
    tg.rateLimitNext("editMessageText", 7);
    const err2 = await rejection(adapter.sink.edit(to, "1", "x"));
    expect([err2.code, err2.retryAfterMs]).toEqual(["RateLimited", 7000]);
  });

  it("5xx and network failures are Transient; 400 and 403 are Rejected", async () => {
    tg.failNext("sendMessage", { status: 500 });
    expect((await rejection(adapter.sink.send(to, "hi"))).code).toBe("Transient");
    tg.failNext("sendMessage", { status: 502, description: "Bad Gateway" });
    expect((await rejection(adapter.sink.send(to, "hi"))).code).toBe("Transient");
    expect(tg.callsTo("sendMessage")).toHaveLength(2);

    tg.failNext("sendMessage", { status: 403, description: "Forbidden: bot was blocked by the user" });
    const blocked = await rejection(adapter.sink.send(to, "hi"));
    expect(blocked.code).toBe("Rejected");
    expect(blocked.message).toMatch(/blocked/);
    const notFound = await rejection(adapter.sink.send({ ...to, chatId: "-100999" }, "hi"));
    expect(notFound.code).toBe("Rejected");
    expect(notFound.message).toMatch(/chat not found/);

    // Nothing listens on this port: a network error.
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const offline = newAdapter(tg, { apiRoot: `http://127.0.0.1:${port}` });
    const net = await rejection(offline.sink.send(to, "hi"));
    expect(net.code).toBe("Transient");
  });

  it("edit: changes the text; 'message is not modified' counts as success; a missing message is Rejected", async () => {
    const { messageId } = await adapter.sink.send(to, "draft");
    await adapter.sink.edit(to, messageId, renderTelegramHtml("draft **done**"));
    expect(tg.sent()[0]!.history).toEqual(["draft", "draft <b>done</b>"]);
    await adapter.sink.edit(to, messageId, renderTelegramHtml("draft **done**"));
    const edits = tg.callsTo("editMessageText");
    expect(edits).toHaveLength(2);
    expect(edits[1]!.status).toBe(400);
    expect(edits[1]!.error).toMatch(/message is not modified/);
    expect((await rejection(adapter.sink.edit(to, "4242", "x"))).code).toBe("Rejected");
    expect((await rejection(adapter.sink.edit(to, "not-a-number", "x"))).code).toBe("Rejected");
  });

  it("typing failures are thrown as AdapterError, not swallowed", async () => {
    await adapter.sink.typing(to);
    expect(tg.callsTo("sendChatAction")[0]!.params).toMatchObject({ chat_id: dm.id, action: "typing" });
    tg.failNext("sendChatAction", { status: 500 });
    expect((await rejection(adapter.sink.typing(to))).code).toBe("Transient");
    tg.failNext("sendChatAction", { status: 400, description: "Bad Request: not enough rights" });
    expect((await rejection(adapter.sink.typing(to))).code).toBe("Rejected");
  });

  it("react sets a reaction on the user's message; a missing message is Rejected", async () => {
    const u = tg.userMessage({ chat: dm, from: alice, text: "thanks" });
    await adapter.sink.react!(to, String(u.message!.message_id), "👍");
    expect(tg.callsTo("setMessageReaction")[0]!.params).toMatchObject({
      chat_id: dm.id,
      message_id: u.message!.message_id,
      reaction: [{ type: "emoji", emoji: "👍" }],
    });
    expect((await rejection(adapter.sink.react!(to, "777", "👍"))).code).toBe("Rejected");
  });

  it("refuses addresses it cannot serve before calling Telegram", async () => {
    expect((await rejection(adapter.sink.send({ ...to, platform: "slack" }, "hi"))).message).toMatch(/platform "slack"/);
    expect((await rejection(adapter.sink.send({ ...to, botId: "42" }, "hi"))).message).toMatch(/bot 42/);
    expect((await rejection(adapter.sink.send({ ...to, threadId: `${dm.id}:topic:3` }, "hi"))).message).toMatch(/message_thread_id/);
    expect((await rejection(adapter.sink.send(to, "   "))).message).toMatch(/empty/);
    expect(tg.callsTo("sendMessage")).toHaveLength(0);
  });
});
