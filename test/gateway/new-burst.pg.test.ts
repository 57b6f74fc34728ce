/**
 * Twenty members send /new at the same moment. Whatever way the platform
 * delivers them (one getUpdates batch, parallel webhook connections, parallel
 * Slack event POSTs, a burst of gateway dispatches), every /new that arrived
 * before the first of them was handled compares against the same session:
 * one rotation, nineteen "A fresh session was already started."
 *
 * Through the real SDKs (grammY, Bolt, discord.js) against the fakes, the
 * whole gateway on a real database.
 */
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { DiscordAdapter } from "../../adapters/discord/index.js";
import { SlackAdapter } from "../../adapters/slack/index.js";
import { TelegramAdapter } from "../../adapters/telegram/index.js";
import { echoAgent, latestUserText } from "../../src/agent/echo.js";
import type { Agent } from "../../src/agent/types.js";
import type { App } from "../../src/gateway/app.js";
import type { Info } from "../../src/session/info.js";
import { FakeDiscord } from "../fakes/discord.js";
import { FakeSlack } from "../fakes/slack.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { eventually, startApp } from "../support/app.js";
import { MemoryAdapter } from "../support/memory-adapter.js";
import type { TestProvider } from "../support/db.js";
import { unmarked } from "../support/notices.js";
import { prisma } from "../support/prisma.js";

const N = 20;
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

async function sessionsWith(app: App, match: (s: Info) => boolean): Promise<Info[]> {
  return (await app.registry.listAll({ includeArchived: true, limit: 1000 })).filter(match);
}

/** Waits for all N answers, then checks them and the sessions. */
async function expectOneRotation(
  app: App,
  replies: () => string[],
  chatSessions: () => Promise<Info[]>,
): Promise<{ fresh: number; already: number; sessions: number }> {
  const all = await eventually(replies, (r) => r.filter((t) => /fresh session/.test(t)).length >= N, 30_000, `${N} answers to /new`);
  const fresh = all.filter((t) => /^Started a fresh session/.test(unmarked(t))).length;
  const already = all.filter((t) => t === "A fresh session was already started.").length;
  const sessions = await chatSessions();
  // The conversation's first session, and its one successor.
  expect({ fresh, already, sessions: sessions.length, archived: sessions.filter((s) => s.archived).length }).toEqual({
    fresh: 1,
    already: N - 1,
    sessions: 2,
    archived: 1,
  });
  const successor = sessions.find((s) => !s.archived)!;
  expect(successor.parentId).toBe(sessions.find((s) => s.archived)!.id);
  expect(sessions.find((s) => s.archived)!.endReason).toBe("new");
  void app;
  return { fresh, already, sessions: sessions.length };
}

/**
 * The echo agent, except that "hold" is answered only once release() is
 * called: a turn is running while the burst arrives, so every /new of it is
 * recorded before the first can be handled (it waits for the running turn).
 */
function heldAgent(): { agent: Agent; release(): void } {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const echo = echoAgent();
  return {
    release,
    agent: {
      name: "held",
      async *run(req) {
        if (latestUserText(req.messages).includes("hold")) await gate;
        yield* echo.run(req);
      },
    },
  };
}

async function recordedCount(app: App, text: RegExp): Promise<number> {
  const rows = await prisma(app.db).read((c) => c.inboundEvent.findMany({ select: { envelope: true } }));
  return rows.filter((r) => text.test(String(JSON.parse(r.envelope).text))).length;
}

/** Each mode: SQLite with one process, and PostgreSQL in shared-database mode (the binding re-read for every event). */
const MODES = [
  { provider: "sqlite" as TestProvider, env: {} as Record<string, string> },
  { provider: "postgresql" as TestProvider, env: { SHARED_DATABASE: "true" } as Record<string, string> },
];

describe("a burst of /new rotates once", () => {
  for (const mode of ["polling"] as const) {
    it(`Telegram (grammY, ${mode}): ${N} members' /new in one delivery, in a fresh group`, async () => {
      const tg = new FakeTelegram();
      await tg.start();
      cleanups.push(() => tg.close());
      const adapter = new TelegramAdapter({ token: tg.token, apiRoot: tg.apiRoot, mode, pollingTimeoutSec: 1 });
      const { app } = await startApp("sqlite", [adapter], { GROUP_REQUIRE_MENTION: "true" });
      cleanups.push(() => app.stop());
      const group = tg.supergroup("Burst");
      const members = Array.from({ length: N }, (_, i) => tg.user(`member${i}`));
      // A fresh group: nothing was ever said in it before the burst.
      tg.injectMany(members.map((from) => tg.build.command({ chat: group, from, command: "new" })));
      const r = await expectOneRotation(
        app,
        () => tg.sent({ chatId: group.id }).map((m) => m.text),
        () => sessionsWith(app, (s) => s.channel.includes(String(group.id))),
      );
      console.log(`telegram ${mode}: ${JSON.stringify(r)}`);
    });
  }

  for (const { provider, env } of MODES) {
    it(`Slack (Bolt, HTTP events) on ${provider}${env.SHARED_DATABASE ? " (shared database)" : ""}: ${N} members' /new posted in parallel into one thread`, async () => {
      const sl = new FakeSlack();
      await sl.start();
      cleanups.push(() => sl.close());
      const held = heldAgent();
      const adapter = new SlackAdapter({ botToken: sl.botToken, signingSecret: sl.signingSecret, apiUrl: sl.apiUrl });
      const { app, url } = await startApp(provider, [adapter], { GROUP_REQUIRE_MENTION: "true", ...env }, { agentFactory: () => held.agent });
      cleanups.push(() => app.stop());
      const events = `${url}/slack/events`;
      const channel = "C0BURST01";
      const bot = `<@${sl.identity.botUserId}>`;
      const now = Math.floor(Date.now() / 1000);
      const rootTs = `${now}.000100`;
      const mention = (user: string, text: string, ts: string) => [
        sl.events.message({ channel, user, text: `${bot} ${text}`, ts, threadTs: rootTs }),
        sl.events.appMention({ channel, user, text: `${bot} ${text}`, ts, threadTs: rootTs }),
      ];
      for (const b of mention("U0BURSTHOLD", "hold", `${now}.000150`)) expect((await sl.postEvent(events, b)).status).toBe(200);
      const users = Array.from({ length: N }, (_, i) => `U0BURST${String(i).padStart(3, "0")}`);
      // Each /new is a mention inside the same thread: Slack sends the message and its app_mention.
      const bodies = users.flatMap((user, i) => mention(user, "/new", `${now}.${String(200 + i).padStart(6, "0")}`));
      const answers = await Promise.all(bodies.map((b) => sl.postEvent(events, b)));
      expect(answers.map((a) => a.status)).toEqual(bodies.map(() => 200));
      await eventually(
        () => recordedCount(app, /\/new/),
        (n) => n === N,
        10_000,
        `${N} /new recorded`,
      );
      held.release();
      const replies = () =>
        sl
          .sent({ channel })
          .filter((m) => m.threadTs === rootTs)
          .map((m) => m.text);
      const r = await expectOneRotation(
        app,
        () => replies().filter((t) => !t.startsWith("echo")),
        () => sessionsWith(app, (s) => s.channel.includes(channel)),
      );
      expect(replies()[0]).toBe("echo: hold");
      console.log(`slack ${provider}${env.SHARED_DATABASE ? " shared" : ""}: ${JSON.stringify(r)}`);
    });

    it(`Telegram (grammY, webhook) on ${provider}${env.SHARED_DATABASE ? " (shared database)" : ""}: ${N} members' /new over parallel connections while a turn runs`, async () => {
      const tg = new FakeTelegram();
      await tg.start();
      cleanups.push(() => tg.close());
      const port = await freePort();
      const held = heldAgent();
      const adapter = new TelegramAdapter({
        token: tg.token,
        apiRoot: tg.apiRoot,
        mode: "webhook",
        webhookSecret: "burst_secret",
        webhookUrl: `http://127.0.0.1:${port}/telegram/${tg.botUser.id}`,
      });
      const { app } = await startApp(
        provider,
        [adapter],
        { HTTP_PORT: String(port), GROUP_REQUIRE_MENTION: "true", ...env },
        { agentFactory: () => held.agent },
      );
      cleanups.push(() => app.stop());
      await eventually(
        () => tg.webhook,
        (w) => w !== null,
        10_000,
        "setWebhook",
      );
      const group = tg.supergroup("Burst");
      const members = Array.from({ length: N }, (_, i) => tg.user(`member${i}`));
      tg.mention({ chat: group, from: members[0]!, text: "hold" });
      await eventually(
        () => recordedCount(app, /hold/),
        (n) => n === 1,
        10_000,
        "the held message recorded",
      );
      tg.injectMany(members.map((from) => tg.build.command({ chat: group, from, command: "new" })));
      await eventually(
        () => recordedCount(app, /\/new/),
        (n) => n === N,
        10_000,
        `${N} /new recorded`,
      );
      held.release();
      const replies = () => tg.sent({ chatId: group.id }).map((m) => m.text);
      const r = await expectOneRotation(
        app,
        () => replies().filter((t) => !t.startsWith("echo")),
        () => sessionsWith(app, (s) => s.channel.includes(String(group.id))),
      );
      console.log(`telegram webhook ${provider}${env.SHARED_DATABASE ? " shared" : ""}: ${JSON.stringify(r)}`);
    });
  }

  for (const { provider, env } of MODES) {
    it(`on ${provider}${env.SHARED_DATABASE ? " (shared database)" : ""}: /new, messages, /new, all sent before the first is handled, rotate twice; /new, /new rotate once`, async () => {
      const held = heldAgent();
      const adapter = new MemoryAdapter();
      const { app } = await startApp(provider, [adapter], env, { agentFactory: () => held.agent });
      cleanups.push(() => app.stop());
      const chat = "interleaved";
      const texts = ["hold", "/new", "one", "two", "/new", "/new", "three"];
      for (const t of texts) await adapter.ctx.inbound(adapter.dm(chat, t));
      await eventually(
        () => recordedCount(app, /./),
        (n) => n === texts.length,
        10_000,
        "all recorded",
      );
      held.release();
      const replies = await eventually(
        () => adapter.to(chat).map((m) => m.text),
        (r) => r.length === texts.length,
        30_000,
        "every answer",
      );
      expect(replies.map((r) => (unmarked(r).startsWith("Started a fresh session") ? "NEW" : r))).toEqual([
        "echo: hold",
        "NEW",
        "echo: one",
        "echo: two",
        "NEW",
        "A fresh session was already started.",
        "echo: three",
      ]);
      const sessions = await sessionsWith(app, (s) => s.channel.endsWith(`:dm:${chat}`));
      expect(sessions).toHaveLength(3);
    });
  }

  it(`Discord (discord.js): ${N} members' /new dispatched back to back in one channel`, async () => {
    const dc = new FakeDiscord();
    await dc.start();
    cleanups.push(() => dc.close());
    const members = Array.from({ length: N }, (_, i) => dc.user(`member${i}`));
    const guild = dc.addGuild({ channels: ["burst"], members });
    const channel = guild.channels.burst!;
    const adapter = new DiscordAdapter({ token: dc.token, apiUrl: dc.apiUrl });
    const { app } = await startApp("sqlite", [adapter], { GROUP_REQUIRE_MENTION: "true" });
    cleanups.push(() => app.stop());
    for (const author of members) dc.userMessage({ channel, author, content: "/new" });
    const r = await expectOneRotation(
      app,
      () => dc.sent({ channelId: channel.id }).map((m) => m.content),
      () => sessionsWith(app, (s) => s.channel.includes(channel.id)),
    );
    console.log(`discord: ${JSON.stringify(r)}`);
  });
});
