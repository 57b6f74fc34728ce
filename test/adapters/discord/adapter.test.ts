/**
 * The adapter's lifecycle against FakeDiscord with real discord.js: login and
 * health, slash-command registration once per change, inbound order, RESUME
 * replay, slash commands deferred within 3 s and answered through the
 * original response, stop() during a reconnect, and configuration.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { commandsHash, commandsKey, discordCommandList } from "../../../adapters/discord/commands.js";
import { DiscordAdapter, discordAdapterFromConfig } from "../../../adapters/discord/index.js";
import { REST_HANDLER_SWEEP_MS } from "../../../adapters/discord/client.js";
import type { Client } from "discord.js";
import { FakeDiscord, type DUser } from "../../fakes/discord.js";
import { makeContext, NO_IDENTIFY_THROTTLE, newAdapter, until } from "./helpers.js";

let dc: FakeDiscord;
let alice: DUser;
let adapters: DiscordAdapter[] = [];

beforeEach(async () => {
  dc = new FakeDiscord({ heartbeatIntervalMs: 250 });
  await dc.start();
  alice = dc.user("alice");
});

afterEach(async () => {
  for (const a of adapters) await a.stop();
  adapters = [];
  await dc.close();
});

function adapter(extra: Parameters<typeof newAdapter>[1] = {}): DiscordAdapter {
  const a = newAdapter(dc, extra);
  adapters.push(a);
  return a;
}

describe("DiscordAdapter", () => {
  it("starts: bot id and username from READY, limits, healthy; token never logged", async () => {
    const a = adapter();
    const ctx = makeContext();
    expect(a.health().ready).toBe(false);
    await a.start(ctx);
    expect(a.botId).toBe(dc.bot.id);
    expect(a.botUsername).toBe(dc.bot.username);
    expect(a.health()).toEqual({ ready: true });
    expect(a.limits).toMatchObject({
      maxTextLength: 2000,
      editIntervalMs: { private: 1000, group: 1500 },
      perChat: { ratePerSec: 1, burst: 5 },
      global: { ratePerSec: 40, burst: 50 },
      canEdit: true,
    });
    expect(dc.identifies[0]!.d.intents).toBe(1 | (1 << 9) | (1 << 12) | (1 << 15));
    await a.stop();
    expect(a.health().ready).toBe(false);
    expect(ctx.logLines.join("")).not.toContain(dc.token);
  });

  it("sends its REST calls through Node's fetch, not discord.js's own undici (the build loads that only on first use)", async () => {
    const seen: string[] = [];
    const nodeFetch = globalThis.fetch;
    globalThis.fetch = ((url: string | URL | Request, init?: RequestInit) => (seen.push(String(url)), nodeFetch(url, init))) as typeof fetch;
    try {
      await adapter().start(makeContext());
    } finally {
      globalThis.fetch = nodeFetch;
    }
    expect(seen.some((u) => u.endsWith("/gateway/bot"))).toBe(true);
  });

  it("registers slash commands with one bulk overwrite, not again while unchanged, again when changed", async () => {
    const store = new Map<string, string>();
    const ctx = makeContext({ store });
    const a = adapter();
    await a.start(ctx);
    await a.stop();
    expect(dc.restCalls("PUT /applications/:app/commands")).toHaveLength(1);
    expect(dc.commands().map((c) => c.name)).toEqual(["new", "status", "stop", "help"]);
    expect(store.get(commandsKey(dc.bot.id))).toBe(commandsHash(dc.applicationId, discordCommandList(ctx.commands)));

    const b = adapter();
    await b.start(makeContext({ store }));
    await b.stop();
    expect(dc.restCalls("PUT /applications/:app/commands")).toHaveLength(1);

    const c = adapter();
    await c.start(makeContext({ store, commands: [{ name: "new", description: "Fresh session" }] }));
    expect(dc.restCalls("PUT /applications/:app/commands")).toHaveLength(2);
    expect(dc.commands().map((x) => x.name)).toEqual(["new"]);
  });

  it("DM, guild and thread messages reach inbound in order; own echoes are not passed on", async () => {
    const g = dc.addGuild({ members: [alice], threads: ["help"] });
    const a = adapter();
    const ctx = makeContext();
    await a.start(ctx);
    const dm = dc.dmChannel(alice);
    for (let i = 0; i < 5; i++) dc.userMessage({ channel: dm, author: alice, content: `dm ${i}` });
    dc.userMessage({ channel: g.channels.general!, author: alice, content: `<@${dc.bot.id}> hi` });
    dc.userMessage({ channel: g.threads.help!, author: alice, content: "thread" });
    await dc.waitFor(() => ctx.recorded.length === 7);
    expect(ctx.recorded.filter((e) => e.chatKind === "private").map((e) => e.text)).toEqual(["dm 0", "dm 1", "dm 2", "dm 3", "dm 4"]);
    expect(ctx.recorded.find((e) => e.chatKind === "group")).toMatchObject({ mentioned: true, text: "hi", chatTitle: "general" });
    expect(ctx.recorded.find((e) => e.chatKind === "thread")).toMatchObject({ chatId: g.channels.general!.id, threadId: g.threads.help!.id });

    await a.sink.send(ctx.recorded[0]!.replyTo, "echoed back by the fake");
    await new Promise((r) => setTimeout(r, 100).unref());
    expect(ctx.recorded).toHaveLength(7);
  });

  it("a record that keeps failing is retried (Discord never redelivers), beyond the old 6 attempts, and later messages of the channel wait", async () => {
    // 1 ms doubling: ten failures wait ~1 s in all (at the default 5 ms, 5 s).
    const a = adapter({ inboundBackoffMs: 1 });
    const ctx = makeContext();
    const inner = ctx.inbound.bind(ctx);
    let failures = 0;
    const errors: string[] = [];
    ctx.reportError = (where) => void errors.push(where);
    ctx.inbound = async (env) => {
      if (failures < 10) {
        failures++;
        throw Object.assign(new Error("database or disk is full"), { code: "SQLITE_FULL" });
      }
      return inner(env);
    };
    await a.start(ctx);
    const dm = dc.dmChannel(alice);
    dc.userMessage({ channel: dm, author: alice, content: "first" });
    dc.userMessage({ channel: dm, author: alice, content: "second" });
    await until(() => ctx.recorded.length === 2, 20_000, "both recorded");
    expect(ctx.recorded.map((e) => e.text)).toEqual(["first", "second"]);
    expect(errors.filter((w) => w === "discord-record")).toHaveLength(10);
    expect(ctx.logLines.some((l) => l.includes("retrying (later events of its channel wait)"))).toBe(true);
  });

  it("forced disconnect + RESUME: replayed events reach inbound; the gateway's dedupe would answer each once", async () => {
    const g = dc.addGuild({ members: [alice] });
    const a = adapter();
    const ctx = makeContext();
    await a.start(ctx);
    const general = g.channels.general!;
    dc.userMessage({ channel: general, author: alice, content: "before" });
    await dc.waitFor(() => ctx.recorded.length === 1);

    dc.forceDisconnect({ resumable: true });
    const missed = [
      dc.userMessage({ channel: general, author: alice, content: "missed 1" }),
      dc.userMessage({ channel: dc.dmChannel(alice), author: alice, content: "missed 2" }),
    ];
    await dc.waitFor(() => ctx.recorded.length === 3, 5000);
    expect(dc.resumes).toHaveLength(1);
    expect(dc.identifies).toHaveLength(1);
    expect(ctx.recorded.map((e) => e.text)).toEqual(["before", "missed 1", "missed 2"]);
    expect(ctx.recorded.slice(1).map((e) => e.eventId)).toEqual(missed.map((m) => m.id));
    // Each event reached inbound exactly once here; were one replayed twice, its eventId repeats and the gateway drops it.
    expect(ctx.duplicates).toEqual([]);
    await until(() => a.health().ready, 3000, "healthy after resume");
  });

  it("a slash command is deferred within 3 s and answered by filling the original response", async () => {
    const g = dc.addGuild({ members: [alice] });
    const a = adapter();
    const ctx = makeContext();
    await a.start(ctx);
    const payload = dc.slashCommand({ name: "new", user: alice, channel: g.channels.general!, options: { args: "kickoff" } });
    const interactionId = String(payload.id);
    await dc.waitFor(() => ctx.recorded.find((e) => e.eventId === interactionId));
    const env = ctx.recorded.find((e) => e.eventId === interactionId)!;
    expect(env).toMatchObject({ text: "/new kickoff", mentioned: true, chatKind: "group", senderId: alice.id });
    const callback = await dc.waitForRest("POST /interactions/:id/:token/callback");
    expect(callback.status).toBe(204);
    expect(callback.at - Number(BigInt(interactionId) >> 22n) - 1_420_070_400_000).toBeLessThan(3000);
    expect(dc.interaction(interactionId)?.responseType).toBe(5);

    // The gateway's reply: typing is skipped (Discord shows "thinking..."), chunk 1 fills @original, chunk 2 is a follow-up.
    await a.sink.typing(env.replyTo);
    expect(dc.restCalls("POST /channels/:id/typing")).toHaveLength(0);
    const first = await a.sink.send(env.replyTo, "Started a new session: kickoff", { idempotencyKey: "d:0" });
    const second = await a.sink.send(env.replyTo, "part two", { idempotencyKey: "d:1" });
    const state = dc.interaction(interactionId)!;
    expect(first.messageId).toBe(state.originalId);
    expect(state.followups).toEqual([second.messageId]);
    expect(dc.sent().find((s) => s.id === state.originalId)).toMatchObject({ via: "interaction", content: "Started a new session: kickoff", loading: false });
    expect(dc.restCalls("PATCH /webhooks/:app/:token/messages/@original")[0]!.body).toMatchObject({ allowed_mentions: { parse: [] } });
    await a.sink.edit(env.replyTo, first.messageId, "Started a new session: kickoff (edited)");
    expect(dc.sent().find((s) => s.id === state.originalId)!.content).toBe("Started a new session: kickoff (edited)");
    expect(dc.restCalls("POST /channels/:id/messages")).toHaveLength(0);
  });

  it("an interaction that could not be deferred is answered in the channel", async () => {
    const dm = dc.dmChannel(alice);
    const a = adapter();
    const ctx = makeContext();
    await a.start(ctx);
    dc.failNext("/interactions/*", { status: 404, code: 10062, message: "Unknown interaction" });
    const payload = dc.slashCommand({ name: "help", user: alice, channel: dm });
    await dc.waitFor(() => ctx.recorded.find((e) => e.eventId === payload.id));
    await a.sink.send(ctx.recorded[0]!.replyTo, "the commands are ...");
    expect(dc.sent({ via: "channel", channelId: dm.id })[0]).toMatchObject({ content: "the commands are ..." });
  });

  it("stop() resolves quickly even while the gateway connection is being re-established", async () => {
    dc.addGuild({ members: [alice] });
    const a = adapter();
    await a.start(makeContext());
    dc.forceDisconnect({ resumable: false });
    const t0 = Date.now();
    await a.stop();
    expect(Date.now() - t0).toBeLessThan(2500);
    expect(a.health()).toEqual({ ready: false, detail: "stopped" });
  });

  it("stop() resolves quickly when the gateway has gone away entirely", async () => {
    const a = adapter();
    await a.start(makeContext());
    dc.forceDisconnect({ resumable: true });
    await dc.gateway.close();
    const t0 = Date.now();
    await a.stop();
    expect(Date.now() - t0).toBeLessThan(2500);
  });

  it("configuration: no token -> undefined; options from the environment; bad shard values explain the fix", () => {
    expect(discordAdapterFromConfig({})).toBeUndefined();
    expect(discordAdapterFromConfig({ DISCORD_BOT_TOKEN: "  " })).toBeUndefined();
    const a = discordAdapterFromConfig({
      DISCORD_BOT_TOKEN: "abc.def.ghi",
      DISCORD_API_URL: "http://127.0.0.1:1/api",
      DISCORD_ALLOW_BOTS: true,
      DISCORD_MENTION_ROLES: ["123"],
      DISCORD_SHARD_ID: "1",
      DISCORD_SHARD_COUNT: "2",
    });
    expect(a).toBeInstanceOf(DiscordAdapter);
    expect(a!.platform).toBe("discord");
    expect(() => discordAdapterFromConfig({ DISCORD_BOT_TOKEN: "abc.def.ghi", DISCORD_SHARD_ID: "1" })).toThrow(/DISCORD_SHARD_COUNT/);
    expect(() => discordAdapterFromConfig({ DISCORD_BOT_TOKEN: "abc.def.ghi", DISCORD_SHARD_ID: "2", DISCORD_SHARD_COUNT: "2" })).toThrow(
      /0\.\.DISCORD_SHARD_COUNT-1/,
    );
    expect(() => new DiscordAdapter({ token: "abc.def.ghi", apiUrl: "http://x/api/" })).toThrow(/trailing slash/);
  });

  it("runs one shard of several: IDENTIFY carries [id, count]", async () => {
    const a = adapter({ shard: { id: 1, count: 2 } });
    await a.start(makeContext());
    expect(dc.identifies[0]!.d.shard).toEqual([1, 2]);
  });

  it("keeps no REST handler per channel once its sends are done: swept every minute (discord.js: hourly), an override kept", async () => {
    const restOf = (x: DiscordAdapter) => (x as unknown as { client: Client }).client.rest;
    const a = adapter();
    await a.start(makeContext());
    expect(restOf(a).options.handlerSweepInterval).toBe(REST_HANDLER_SWEEP_MS);
    expect(REST_HANDLER_SWEEP_MS).toBe(60_000);
    await a.stop();

    // The same sweep, on a short interval: a handler per channel sent to, all gone once idle.
    const b = adapter({ clientOptions: { ...NO_IDENTIFY_THROTTLE, rest: { handlerSweepInterval: 50 } } });
    const ctx = makeContext();
    await b.start(ctx);
    const users = [alice, dc.user("bob"), dc.user("carol")];
    for (const u of users) dc.userMessage({ channel: dc.dmChannel(u), author: u, content: "hi" });
    await dc.waitFor(() => ctx.recorded.length === 3);
    for (const e of ctx.recorded) await b.sink.send(e.replyTo, "answer");
    expect(dc.sent()).toHaveLength(3);
    await until(() => restOf(b).handlers.size === 0, 10_000, "the idle handlers swept");
    // A channel sent to after the sweep gets a new handler and its send goes through.
    await b.sink.send(ctx.recorded[0]!.replyTo, "again");
    expect(dc.sent()).toHaveLength(4);
  });
});
