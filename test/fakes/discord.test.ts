/**
 * FakeDiscord driven by the real discord.js Client (REST + gateway).
 */
import { once } from "node:events";
import { ChannelType, Client, DiscordAPIError, Events, GatewayIntentBits, Partials, type ClientOptions, type Message, type RateLimitData } from "discord.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FakeDiscord, type DUser } from "./discord.js";

const INTENTS = [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.DirectMessages, GatewayIntentBits.MessageContent];

let dc: FakeDiscord;
let clients: Client[] = [];
let human: DUser;

beforeEach(async () => {
  dc = new FakeDiscord({ heartbeatIntervalMs: 250 });
  await dc.start();
  human = dc.user("alice");
});

afterEach(async () => {
  for (const c of clients) await c.destroy();
  clients = [];
  await dc.close();
});

/** Logs a discord.js client in against the fake and waits for clientReady. */
async function login(extra: Partial<ClientOptions> = {}, setup?: (c: Client) => void): Promise<Client> {
  const client = new Client({
    intents: INTENTS,
    partials: [Partials.Channel, Partials.Message],
    rest: { api: dc.apiUrl },
    ...extra,
  });
  clients.push(client);
  setup?.(client);
  const ready = once(client, Events.ClientReady);
  await client.login(dc.token);
  await ready;
  return client;
}

describe("FakeDiscord with discord.js", () => {
  it("the application's flags decide the Message Content intent: without them IDENTIFY is closed with 4014, as Discord does", async () => {
    const app = (await (await fetch(`${dc.apiUrl}/v10/applications/@me`, { headers: { authorization: `Bot ${dc.token}` } })).json()) as { flags: number };
    expect(app.flags & (1 << 19)).toBe(1 << 19);

    const off = new FakeDiscord({ heartbeatIntervalMs: 250, applicationFlags: 0 });
    await off.start();
    try {
      const appOff = (await (await fetch(`${off.apiUrl}/v10/applications/@me`, { headers: { authorization: `Bot ${off.token}` } })).json()) as {
        flags: number;
      };
      expect(appOff.flags).toBe(0);
      const client = new Client({ intents: INTENTS, rest: { api: off.apiUrl } });
      clients.push(client);
      await expect(client.login(off.token)).rejects.toThrow(/disallowed intents/i);
      // Without MessageContent the same application logs in.
      const plain = new Client({ intents: [GatewayIntentBits.Guilds, GatewayIntentBits.DirectMessages], rest: { api: off.apiUrl } });
      clients.push(plain);
      const ready = once(plain, Events.ClientReady);
      await plain.login(off.token);
      await ready;
    } finally {
      for (const c of clients.splice(0)) await c.destroy();
      await off.close();
    }
  });

  it("logs in: READY then GUILD_CREATE fill the caches, heartbeats are ACKed", async () => {
    const g = dc.addGuild({ name: "Test Guild", channels: ["general", "random"], threads: ["help-thread"], members: [human] });
    const client = await login();

    expect(client.user?.id).toBe(dc.bot.id);
    const guild = client.guilds.cache.get(g.id)!;
    expect(guild.name).toBe("Test Guild");
    expect(guild.channels.cache.get(g.channels.general!.id)?.type).toBe(ChannelType.GuildText);
    const thread = client.channels.cache.get(g.threads["help-thread"]!.id);
    expect(thread?.isThread() && thread.parentId).toBe(g.channels.general!.id);
    expect(dc.identifies).toHaveLength(1);
    expect(dc.identifies[0]!.d).toMatchObject({ token: dc.token, shard: [0, 1], intents: 1 | (1 << 9) | (1 << 12) | (1 << 15) });
    expect(dc.identifies[0]!.url).toMatch(/^\/gateway\?v=10&encoding=json$/);
    expect(dc.restCalls("GET /gateway/bot")[0]!.auth).toBe(`Bot ${dc.token}`);

    await dc.waitFor(() => dc.heartbeats >= 1 && client.ws.ping >= 0);
    expect(dc.frames.some((f) => f.dir === "out" && f.op === 11)).toBe(true);
  });

  it("DM, guild mention and thread message reach the handler; replies, typing, edits and reactions are recorded", async () => {
    const g = dc.addGuild({ threads: ["t1"], members: [human] });
    const general = g.channels.general!;
    const seen: { where: string; content: string; mentionsMe: boolean; channelType: number }[] = [];
    const client = await login({}, (c) =>
      c.on(Events.MessageCreate, async (msg: Message) => {
        if (msg.author.bot) return;
        seen.push({ where: msg.guildId ? "guild" : "dm", content: msg.content, mentionsMe: msg.mentions.users.has(c.user!.id), channelType: msg.channel.type });
        if (msg.channel.isSendable()) await msg.channel.sendTyping();
        const reply = await msg.reply(`echo ${msg.content}`);
        if (msg.content.includes("edit")) await reply.edit(`${reply.content} (edited)`);
        if (msg.content.includes("react")) await msg.react("👍");
      }),
    );

    const dm = dc.dmChannel(human);
    const m1 = dc.userMessage({ channel: dm, author: human, content: "hello dm, edit please" });
    const m2 = dc.userMessage({ channel: general, author: human, content: `<@${dc.bot.id}> hi guild, react` });
    const m3 = dc.userMessage({ channel: g.threads.t1!, author: human, content: "in thread" });
    await dc.waitFor(() => dc.sent().length === 3 && dc.reactions().length === 1 && dc.sent({ channelId: dm.id })[0]?.history.length === 2);

    expect(seen).toEqual([
      { where: "dm", content: "hello dm, edit please", mentionsMe: false, channelType: ChannelType.DM },
      { where: "guild", content: `<@${dc.bot.id}> hi guild, react`, mentionsMe: true, channelType: ChannelType.GuildText },
      { where: "guild", content: "in thread", mentionsMe: false, channelType: ChannelType.PublicThread },
    ]);
    const [r1, r2, r3] = [dm.id, general.id, g.threads.t1!.id].map((id) => dc.sent({ channelId: id })[0]!);
    expect(r1).toMatchObject({
      replyTo: m1.id,
      content: "echo hello dm, edit please (edited)",
      history: ["echo hello dm, edit please", "echo hello dm, edit please (edited)"],
    });
    expect(r2).toMatchObject({ replyTo: m2.id, guildId: g.id });
    expect(r3).toMatchObject({ replyTo: m3.id, content: "echo in thread" });
    expect(r2!.message.referenced_message?.id).toBe(m2.id);
    expect(dc.reactions()[0]).toMatchObject({ messageId: m2.id, emoji: "👍" });
    expect(dc.restCalls("POST /channels/:id/typing")).toHaveLength(3);
    expect(dc.restCalls("PATCH /channels/:id/messages/:mid")[0]!.status).toBe(200);

    // Proactive DM: opens the DM channel via REST, then posts.
    const other = dc.user("bob");
    await client.users.send(other.id, "proactive hello");
    expect(dc.restCalls("POST /users/@me/channels")[0]!.body).toEqual({ recipient_id: other.id });
    expect(dc.sent().at(-1)).toMatchObject({ content: "proactive hello", channelId: dc.dmChannel(other).id });
    // GET /channels/:id
    const fetched = await client.channels.fetch(general.id, { force: true });
    expect(fetched?.id).toBe(general.id);
  });

  it("slash commands: registration, reply (type 4), defer (type 5) + editReply + followUp", async () => {
    const g = dc.addGuild({ members: [human] });
    const client = await login({}, (c) =>
      c.on(Events.InteractionCreate, async (i) => {
        if (!i.isChatInputCommand()) return;
        if (i.commandName === "ping") await i.reply("pong");
        if (i.commandName === "ask") {
          await i.deferReply();
          await i.editReply(`answer to ${i.options.getString("q", true)}`);
          await i.followUp({ content: "secret", flags: 64 });
        }
      }),
    );
    await client.application!.commands.set([
      { name: "ping", description: "Ping" },
      { name: "ask", description: "Ask", options: [{ name: "q", description: "question", type: 3, required: true }] },
    ]);
    await client.application!.commands.set([{ name: "guildonly", description: "Guild command" }], g.id);
    expect(dc.commands().map((c) => c.name)).toEqual(["ping", "ask"]);
    expect(dc.commands(g.id).map((c) => c.name)).toEqual(["guildonly"]);
    const badName = await client.application!.commands.create({ name: "Bad Name", description: "x" }).catch((e: unknown) => e);
    expect((badName as DiscordAPIError).code).toBe(50035);

    const ping = dc.slashCommand({ name: "ping", user: human, channel: g.channels.general! });
    await dc.waitFor(() => dc.interaction(String(ping.id))?.responseType === 4);
    expect(dc.sent({ via: "interaction" })[0]).toMatchObject({ content: "pong", channelId: g.channels.general!.id, loading: false });

    const dm = dc.dmChannel(human);
    const ask = dc.slashCommand({ name: "ask", user: human, channel: dm, options: { q: "life" } });
    await dc.waitFor(() => dc.interaction(String(ask.id))?.followups.length === 1);
    const state = dc.interaction(String(ask.id))!;
    expect(state.responseType).toBe(5);
    const original = dc.sent().find((s) => s.id === state.originalId)!;
    expect(original).toMatchObject({ via: "interaction", content: "answer to life", loading: false, history: ["", "answer to life"] });
    expect(dc.sent({ via: "followup" })[0]).toMatchObject({ content: "secret", ephemeral: true, channelId: dm.id });
    expect(dc.restCalls("PATCH /webhooks/:app/:token/messages/@original")[0]!.status).toBe(200);
  });

  it("a 429 is honoured by discord.js's REST queue; 5xx is retried; Discord error codes surface", async () => {
    const g = dc.addGuild();
    // discord.js reports a 429's parsed headers to rejectOnRateLimit (returning false keeps its retry).
    const limits: RateLimitData[] = [];
    const client = await login({ rest: { api: dc.apiUrl, rejectOnRateLimit: (d) => (limits.push(d), false) } });
    const channel = client.channels.cache.get(g.channels.general!.id);
    if (!channel?.isSendable()) throw new Error("channel not sendable");

    dc.rateLimitNext("POST /channels/:id/messages", { retryAfter: 0.4, scope: "shared" });
    const sent = await channel.send("after the limit");
    const posts = dc.restCalls("POST /channels/:id/messages");
    expect(posts.map((c) => c.status)).toEqual([429, 200]);
    expect(posts[1]!.at - posts[0]!.at).toBeGreaterThanOrEqual(400);
    expect(sent.content).toBe("after the limit");
    expect(limits[0]).toMatchObject({ scope: "shared", global: false, method: "POST", route: "/channels/:id/messages" });
    expect(limits[0]!.retryAfter).toBe(450); // Retry-After 0.4 s + discord.js's 50 ms offset

    dc.failNext("POST /channels/:id/messages", { status: 502 });
    await channel.send("after a 502");
    expect(
      dc
        .restCalls("POST /channels/:id/messages")
        .slice(-2)
        .map((c) => c.status),
    ).toEqual([502, 200]);

    dc.failNext("POST /channels/:id/messages", { status: 403, code: 50013, message: "Missing Permissions" });
    const denied = await channel.send("nope").catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(DiscordAPIError);
    expect((denied as DiscordAPIError).code).toBe(50013);
    const tooLong = await channel.send("x".repeat(2001)).catch((e: unknown) => e);
    expect((tooLong as DiscordAPIError).code).toBe(50035);
    const unknown = await client.rest.post("/channels/1/messages", { body: { content: "x" } }).catch((e: unknown) => e);
    expect((unknown as DiscordAPIError).code).toBe(10003);
    expect(await client.rest.get("/users/@me")).toMatchObject({ id: dc.bot.id, bot: true });
  });

  it("RESUME after a dropped connection replays the missed events (close 4000 and op 7)", async () => {
    const g = dc.addGuild({ members: [human] });
    const general = g.channels.general!;
    const contents: string[] = [];
    const client = await login({}, (c) => c.on(Events.MessageCreate, (m) => void (m.author.bot || contents.push(m.content))));
    const resumed: number[] = [];
    client.on(Events.ShardResume, (_id, replayed) => resumed.push(replayed));
    dc.userMessage({ channel: general, author: human, content: "before" });
    await dc.waitFor(() => contents.length === 1);

    expect(dc.forceDisconnect({ resumable: true })).toBe(1);
    dc.userMessage({ channel: general, author: human, content: "missed 1" });
    dc.userMessage({ channel: dc.dmChannel(human), author: human, content: "missed 2" });
    await dc.waitFor(() => contents.length === 3, 5000);
    expect(contents).toEqual(["before", "missed 1", "missed 2"]);
    expect(dc.resumes).toHaveLength(1);
    expect(dc.resumes[0]).toMatchObject({ replayed: 2 });
    expect(dc.resumes[0]!.url).toMatch(/^\/gateway-resume\?/);
    expect(dc.identifies).toHaveLength(1);

    dc.forceDisconnect({ reconnectOpcode: true });
    dc.userMessage({ channel: general, author: human, content: "missed 3" });
    await dc.waitFor(() => contents.length === 4, 5000);
    expect(dc.resumes).toHaveLength(2);
    expect(dc.identifies).toHaveLength(1);
    await dc.waitFor(() => resumed.length === 2);
    expect(resumed[0]).toBeGreaterThanOrEqual(2); // discord.js counts the replayed dispatches
    expect(dc.sessions()).toHaveLength(1);
  });

  it("a non-resumable disconnect (op 9) makes the client IDENTIFY again", async () => {
    const g = dc.addGuild({ members: [human] });
    const contents: string[] = [];
    // discord.js waits ~5 s between IDENTIFYs of one shard; a no-op throttler skips that in tests.
    await login({ ws: { buildIdentifyThrottler: () => ({ waitForIdentify: async () => undefined }) } }, (c) =>
      c.on(Events.MessageCreate, (m) => void (m.author.bot || contents.push(m.content))),
    );
    dc.forceDisconnect({ resumable: false });
    await dc.waitFor(() => dc.identifies.length === 2 && dc.sessions().filter((s) => s.connected).length === 1, 5000);
    dc.userMessage({ channel: g.channels.general!, author: human, content: "after re-identify" });
    await dc.waitFor(() => contents.includes("after re-identify"));
    expect(dc.sessions().map((s) => s.ended)).toEqual([true, false]);
  });

  it("shards: each shard IDENTIFYs with [id, count]; guild events go to (guild_id >> 22) % count, DMs to shard 0", async () => {
    const g0 = dc.addGuild({ name: "zero", shard: [0, 2], members: [human] });
    const g1 = dc.addGuild({ name: "one", shard: [1, 2], members: [human] });
    const seen: { content: string; shard: number | null }[] = [];
    const client = await login({ shardCount: 2 }, (c) =>
      c.on(Events.MessageCreate, (m) => void (m.author.bot || seen.push({ content: m.content, shard: m.guild?.shardId ?? null }))),
    );
    expect(dc.identifies.map((i) => i.d.shard).sort()).toEqual([
      [0, 2],
      [1, 2],
    ]);
    expect(client.guilds.cache.get(g0.id)?.shardId).toBe(0);
    expect(client.guilds.cache.get(g1.id)?.shardId).toBe(1);

    dc.userMessage({ channel: g0.channels.general!, author: human, content: "to zero" });
    dc.userMessage({ channel: g1.channels.general!, author: human, content: "to one" });
    const dm = dc.userMessage({ channel: dc.dmChannel(human), author: human, content: "dm" });
    await dc.waitFor(() => seen.length === 3);
    expect(seen).toEqual(
      expect.arrayContaining([
        { content: "to zero", shard: 0 },
        { content: "to one", shard: 1 },
        { content: "dm", shard: null },
      ]),
    );
    const shard0 = dc.gateway.sessions.find((s) => s.shardId === 0)!;
    const shard1 = dc.gateway.sessions.find((s) => s.shardId === 1)!;
    const hasMessage = (s: typeof shard0, id: string) => s.history.some((f) => f.t === "MESSAGE_CREATE" && (f.d as { id: string }).id === id);
    expect(hasMessage(shard0, dm.id)).toBe(true);
    expect(hasMessage(shard1, dm.id)).toBe(false);
  });

  it("without MESSAGE_CONTENT, guild messages arrive empty unless they mention the bot", async () => {
    const g = dc.addGuild({ members: [human] });
    const contents: string[] = [];
    await login({ intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages] }, (c) =>
      c.on(Events.MessageCreate, (m) => void (m.author.bot || contents.push(m.content))),
    );
    dc.userMessage({ channel: g.channels.general!, author: human, content: "secret text" });
    dc.userMessage({ channel: g.channels.general!, author: human, content: `<@${dc.bot.id}> visible` });
    await dc.waitFor(() => contents.length === 2);
    expect(contents).toEqual(["", `<@${dc.bot.id}> visible`]);
  });

  it("enforce_nonce: a second create with the same nonce returns the first message and creates nothing", async () => {
    const g = dc.addGuild({ members: [human] });
    const client = await login();
    const channel = g.channels.general!;
    const post = (content: string, nonce: string, enforce: boolean) =>
      client.rest.post(`/channels/${channel.id}/messages`, { body: { content, nonce, ...(enforce ? { enforce_nonce: true } : {}) } }) as Promise<{
        id: string;
        content: string;
      }>;
    const first = await post("once", "n-1", true);
    const again = await post("once, resent", "n-1", true);
    expect(again).toMatchObject({ id: first.id, content: "once" });
    const loose = await post("no enforcement", "n-1", false);
    expect(loose.id).not.toBe(first.id);
    expect(dc.sent({ channelId: channel.id }).map((m) => m.content)).toEqual(["once", "no enforcement"]);
  });
});

describe("FakeDiscord Leave Guild", () => {
  it("DELETE /users/@me/guilds/:id answers 204 and sends GUILD_DELETE; the guild's channels then answer 403 Missing Access; a second leave is Unknown Guild", async () => {
    const g = dc.addGuild({ channels: ["lobby"] });
    const client = await login();
    const channel = Object.values(g.channels)[0]!;
    await client.rest.post(`/channels/${channel.id}/messages`, { body: { content: "before" } });
    const gone = once(client, Events.GuildDelete);
    await client.rest.delete(`/users/@me/guilds/${g.id}`);
    const [guild] = (await gone) as [{ id: string }];
    expect(guild.id).toBe(g.id);
    expect(dc.hasLeft(g.id)).toBe(true);
    expect(dc.restCalls("DELETE /users/@me/guilds/:id")).toHaveLength(1);
    const after = (await client.rest.post(`/channels/${channel.id}/messages`, { body: { content: "after" } }).catch((e: unknown) => e)) as DiscordAPIError;
    expect(after).toMatchObject({ status: 403, code: 50001 });
    const again = (await client.rest.delete(`/users/@me/guilds/${g.id}`).catch((e: unknown) => e)) as DiscordAPIError;
    expect(again).toMatchObject({ status: 404, code: 10004 });
  });
});
