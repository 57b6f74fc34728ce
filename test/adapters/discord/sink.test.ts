/**
 * The sink against FakeDiscord through real discord.js REST: replies quote
 * the user's message, carry a stable nonce with enforce_nonce and ping
 * nobody; typing, edits and reactions; a 429 is waited out by discord.js's
 * queue with order kept and nothing dropped; refusals map to AdapterError.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { DiscordAdapter } from "../../../adapters/discord/index.js";
import { nonceOf } from "../../../adapters/discord/ids.js";
import { isAdapterError } from "../../../adapters/types.js";
import { FakeDiscord, type DUser, type GuildFixture } from "../../fakes/discord.js";
import { makeContext, newAdapter, type TestContext } from "./helpers.js";

let dc: FakeDiscord;
let adapter: DiscordAdapter;
let ctx: TestContext;
let alice: DUser;
let g: GuildFixture;

beforeEach(async () => {
  dc = new FakeDiscord({ heartbeatIntervalMs: 250 });
  await dc.start();
  alice = dc.user("alice");
  g = dc.addGuild({ members: [alice], threads: ["help"] });
  adapter = newAdapter(dc);
  ctx = makeContext();
  await adapter.start(ctx);
});

afterEach(async () => {
  await adapter.stop();
  await dc.close();
});

async function inbound(content: string, channel = g.channels.general!) {
  const m = dc.userMessage({ channel, author: alice, content });
  await dc.waitFor(() => ctx.recorded.find((e) => e.eventId === m.id));
  return ctx.recorded.find((e) => e.eventId === m.id)!;
}

describe("DiscordAdapter sink", () => {
  it("first chunk replies with message_reference; nonce + enforce_nonce stable per key; nobody is pinged", async () => {
    const env = await inbound(`<@${dc.bot.id}> hi`);
    const sent = await adapter.sink.send(env.replyTo, adapter.format.chunks("hello @everyone <@&123>")[0]!, { idempotencyKey: "delivery-1:0" });
    await adapter.sink.send({ ...env.replyTo, replyToMessageId: undefined }, "second chunk", { idempotencyKey: "delivery-1:1" });
    const posts = dc.restCalls("POST /channels/:id/messages");
    expect(posts).toHaveLength(2);
    const [first, second] = posts.map((p) => p.body as Record<string, unknown>);
    expect(first).toMatchObject({
      message_reference: { message_id: env.messageId, fail_if_not_exists: false },
      nonce: nonceOf("delivery-1:0"),
      enforce_nonce: true,
      allowed_mentions: { parse: [], replied_user: false },
    });
    expect(String(first!.nonce)).toHaveLength(25);
    expect(first!.content).not.toContain("@everyone");
    expect(first!.content).not.toContain("<@&");
    expect(second!.message_reference).toBeUndefined();
    expect(second!.nonce).toBe(nonceOf("delivery-1:1"));
    expect(dc.sent()[0]).toMatchObject({ id: sent.messageId, replyTo: env.messageId });

    // The same key again (a resend after a crash) carries the same nonce: Discord drops it.
    await adapter.sink.send(env.replyTo, "hello again", { idempotencyKey: "delivery-1:0" });
    expect((dc.restCalls("POST /channels/:id/messages")[2]!.body as Record<string, unknown>).nonce).toBe(first!.nonce);
  });

  it("content over 2,000 characters is refused by the fake as by Discord (50035), and marked too-long so the gateway re-splits it", async () => {
    const env = await inbound(`<@${dc.bot.id}> hi`);
    const err = await adapter.sink.send(env.replyTo, "x".repeat(2001)).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: "Rejected", reason: "too-long" });
  });

  it("typing, edit and react", async () => {
    const env = await inbound("in a thread", g.threads.help!);
    expect(env).toMatchObject({ chatKind: "thread", chatId: g.channels.general!.id, threadId: g.threads.help!.id });
    await adapter.sink.typing(env.replyTo);
    const sent = await adapter.sink.send(env.replyTo, "draft");
    await adapter.sink.edit(env.replyTo, sent.messageId, "final");
    await adapter.sink.react!(env.replyTo, env.messageId!, "👍");
    expect(dc.restCalls("POST /channels/:id/typing")[0]!.path).toBe(`/channels/${g.threads.help!.id}/typing`);
    expect(dc.sent({ channelId: g.threads.help!.id })[0]).toMatchObject({ content: "final", history: ["draft", "final"] });
    expect(dc.reactions()[0]).toMatchObject({ messageId: env.messageId, emoji: "👍" });
  });

  it("a 429 on POST /channels/:id/messages is waited out by discord.js: 5 messages, in order, 0 drops", async () => {
    const env = await inbound("go");
    dc.rateLimitNext("POST /channels/:id/messages", { retryAfter: 0.3, count: 1 });
    const t0 = Date.now();
    // Sequential, as the gateway's per-chat scheduler sends them.
    for (let i = 0; i < 5; i++) await adapter.sink.send({ ...env.replyTo, replyToMessageId: undefined }, `part ${i}`, { idempotencyKey: `d:${i}` });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(300);
    const posts = dc.restCalls("POST /channels/:id/messages");
    expect(posts.map((p) => p.status)).toEqual([429, 200, 200, 200, 200, 200]);
    expect(dc.sent().map((s) => s.content)).toEqual(["part 0", "part 1", "part 2", "part 3", "part 4"]);
  });

  it("Discord refusals are Rejected, 5xx and network failures Transient", async () => {
    const env = await inbound("x");
    dc.failNext("POST /channels/:id/messages", { status: 403, code: 50013, message: "Missing Permissions" });
    const denied = await adapter.sink.send(env.replyTo, "nope").catch((e: unknown) => e);
    expect(isAdapterError(denied, "Rejected")).toBe(true);
    expect(String((denied as Error).message)).toMatch(/50013.*permission/);
    const unknown = await adapter.sink.send({ ...env.replyTo, chatId: "1" }, "x").catch((e: unknown) => e);
    expect(isAdapterError(unknown, "Rejected")).toBe(true);
    const tooLong = await adapter.sink.send(env.replyTo, "x".repeat(2001)).catch((e: unknown) => e);
    expect(isAdapterError(tooLong, "Rejected")).toBe(true);
    dc.failNext("POST /channels/:id/messages", { status: 502 });
    const bad = await adapter.sink.send(env.replyTo, "x").catch((e: unknown) => e);
    expect(isAdapterError(bad, "Transient")).toBe(true);
    const wrong = await adapter.sink.send({ platform: "telegram", botId: "1", chatId: "2" }, "x").catch((e: unknown) => e);
    expect(isAdapterError(wrong, "Rejected")).toBe(true);
  });
});
