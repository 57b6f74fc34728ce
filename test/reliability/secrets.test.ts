/**
 * Secrets never leak: tokens and secrets set to marker values, error paths
 * exercised (bad signatures, wrong webhook secret, 401s and 429s from the
 * fakes, a model server that rejects the key and echoes it back), and every
 * byte we can observe is searched: log lines, HTTP bodies, chat notices,
 * /metrics; then the same for a real `node bin/switchboard.mjs serve`.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { DiscordAdapter } from "../../adapters/discord/index.js";
import { SlackAdapter } from "../../adapters/slack/index.js";
import { TelegramAdapter } from "../../adapters/telegram/index.js";
import { SECRET_KEYS, loadConfig } from "../../src/config.js";
import { createApp } from "../../src/gateway/app.js";
import { registerSecret } from "../../src/log.js";
import { FakeDiscord } from "../fakes/discord.js";
import { FakeOpenAi, statusReply } from "../fakes/openai.js";
import { FakeSlack } from "../fakes/slack.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { freshDatabaseUrl } from "../support/db.js";
import { capturedLogger, report, sleep, until } from "./helpers.js";

const tag = () => randomBytes(6).toString("hex");
function markers() {
  const t = tag();
  return {
    TELEGRAM_BOT_TOKEN: `123456:MARKER-tg-${t}`,
    TELEGRAM_WEBHOOK_SECRET: `MARKER-wh-${t}`,
    SLACK_BOT_TOKEN: `xoxb-MARKER-sl-${t}`,
    SLACK_SIGNING_SECRET: `MARKER-ss-${t}`,
    OPENAI_API_KEY: `sk-MARKER-oa-${t}`,
    DISCORD_BOT_TOKEN: `MARKER-dc-${t}.part.two`,
  };
}

/** Every place a marker (or its distinctive core) occurs in `haystack`. */
function leaks(m: Record<string, string>, haystack: string): Array<{ key: string; at: string }> {
  const out: Array<{ key: string; at: string }> = [];
  for (const [key, value] of Object.entries(m)) {
    const core = /MARKER-[a-z]+-[0-9a-f]+/.exec(value)![0];
    for (const needle of new Set([value, core, encodeURIComponent(value)])) {
      let i = haystack.indexOf(needle);
      while (i >= 0 && out.length < 50) {
        out.push({ key, at: haystack.slice(Math.max(0, i - 120), i + needle.length + 40) });
        i = haystack.indexOf(needle, i + 1);
      }
    }
  }
  return out;
}

/** A 401 as OpenAI sends it: the body quotes the key it refused. */
const keyRejected = (key: string) =>
  statusReply(
    401,
    {},
    JSON.stringify({
      error: {
        message: `Incorrect API key provided: ${key}. You can find your API key at https://platform.openai.com/account/api-keys.`,
        type: "invalid_request_error",
        code: "invalid_api_key",
      },
    }),
  );

let cleanup: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  for (const f of cleanup.reverse()) await Promise.resolve(f()).catch(() => undefined);
  cleanup = [];
});

describe("no secret in any observable byte", () => {
  it("in-process: logs, HTTP bodies, chat notices and /metrics", async () => {
    const m = markers();
    const tg = new FakeTelegram({ token: m.TELEGRAM_BOT_TOKEN });
    const sl = new FakeSlack({ botToken: m.SLACK_BOT_TOKEN, signingSecret: m.SLACK_SIGNING_SECRET });
    const dc = new FakeDiscord({ token: m.DISCORD_BOT_TOKEN, heartbeatIntervalMs: 1000 });
    await Promise.all([tg.start(), sl.start(), dc.start()]);
    const ai = await FakeOpenAi.start();
    cleanup.push(
      () => ai.close(),
      () => dc.close(),
      () => sl.close(),
      () => tg.close(),
    );
    const env = {
      ...m,
      DATABASE_URL: await freshDatabaseUrl("sqlite"),
      HTTP_PORT: "0",
      LOG_LEVEL: "trace",
      DM_POLICY: "open",
      REFLECT_EVERY_TURNS: "0",
      OPENAI_BASE_URL: ai.baseUrl,
      OPENAI_MODEL: "fake-model",
      TELEGRAM_API_ROOT: tg.apiRoot,
      TELEGRAM_MODE: "webhook",
      SLACK_API_URL: sl.apiUrl,
      DISCORD_API_URL: dc.apiUrl,
    };
    const config = loadConfig(env);
    for (const k of SECRET_KEYS) registerSecret(config[k] as string | undefined); // as serve() does
    const lines: string[] = [];
    const log = capturedLogger(lines);
    const telegram = new TelegramAdapter({ token: m.TELEGRAM_BOT_TOKEN, apiRoot: tg.apiRoot, mode: "webhook", webhookSecret: m.TELEGRAM_WEBHOOK_SECRET, log });
    const slack = new SlackAdapter({ botToken: m.SLACK_BOT_TOKEN, signingSecret: m.SLACK_SIGNING_SECRET, apiUrl: sl.apiUrl, log });
    const discord = new DiscordAdapter({ token: m.DISCORD_BOT_TOKEN, apiUrl: dc.apiUrl, log });
    const app = await createApp(config, { log, adapters: () => [telegram, slack, discord], retryIntervalMs: 300 });
    const url = await app.start();
    cleanup.unshift(() => app.stop());
    const observed: string[] = [];
    const get = async (path: string) => observed.push(await (await fetch(`${url}${path}`)).text());

    // The model server: rejects the key (echoing it), rate limits, fails, then a 401 again for every later turn.
    for (let i = 0; i < 40; i++)
      ai.enqueue(
        i % 3 === 1
          ? statusReply(429, { "retry-after": "0" }, JSON.stringify({ error: { message: `Rate limit reached for key ${m.OPENAI_API_KEY}` } }))
          : keyRejected(m.OPENAI_API_KEY),
      );

    // Telegram: forged webhooks, then genuine messages whose replies meet 429 and 401.
    const hook = `${url}/telegram/${tg.botUser.id}`;
    const alice = tg.user("Alice");
    const dm = tg.privateChat(alice);
    for (const secret of ["wrong", undefined, `${m.TELEGRAM_WEBHOOK_SECRET}x`]) {
      const r = await tg.deliverWebhook(hook, tg.build.message({ chat: dm, from: alice, text: "forged" }), secret);
      observed.push(`${r.status} ${JSON.stringify(r.body)}`);
    }
    tg.rateLimitNext("sendMessage", 1, 1);
    tg.failNext("sendMessage", { status: 401, description: "Unauthorized" });
    for (const text of ["hello", "/status", "/whoami", "/model gpt-4o", "again"]) {
      const r = await tg.deliverWebhook(hook, tg.build.message({ chat: dm, from: alice, text }), m.TELEGRAM_WEBHOOK_SECRET);
      observed.push(`${r.status} ${JSON.stringify(r.body)}`);
    }

    // Slack: bad signatures, then a genuine DM whose reply meets invalid_auth and ratelimited.
    const events = `${url}/slack/events`;
    const body = sl.events.message({ channel: "D0DM0001", user: "U0ALICE", text: "forged" });
    for (const o of [{ secret: "nope" }, { timestamp: Math.floor(Date.now() / 1000) - 900 }, { signature: "v0=00" }]) {
      const r = await sl.postEvent(events, body, o);
      observed.push(`${r.status} ${r.body} ${JSON.stringify(r.headers)}`);
    }
    sl.failNext("chat.postMessage", { error: "invalid_auth" });
    sl.rateLimitNext("chat.postMessage", 1, 1);
    for (const text of ["hi slack", "second"]) {
      const r = await sl.postEvent(events, sl.events.message({ channel: "D0DM0001", user: "U0ALICE", text }));
      observed.push(`${r.status} ${r.body}`);
    }

    // Discord: a DM whose reply meets a 401 then a 429.
    const dAlice = dc.user("alice");
    const dDm = dc.dmChannel(dAlice);
    await until(() => discord.health().ready, 10_000, "discord ready");
    dc.failNext("POST /channels/:id/messages", { status: 401, code: 0, message: "401: Unauthorized" });
    dc.rateLimitNext("POST /channels/:id/messages", { retryAfter: 0.2, count: 1 });
    dc.userMessage({ channel: dDm, author: dAlice, content: "hi discord" });
    dc.userMessage({ channel: dDm, author: dAlice, content: "second discord" });

    // Console API and bad requests to every route.
    observed.push(
      await (await fetch(`${url}/api/console/messages`, { method: "POST", headers: { "content-type": "application/json" }, body: "{not json" })).text(),
    );
    observed.push(
      await (
        await fetch(`${url}/api/console/messages`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ chat: { type: "private" }, sender: { id: "op", name: "Op" }, text: "console hi" }),
        })
      ).text(),
    );
    observed.push(await (await fetch(`${url}/slack/events`, { method: "POST", body: "x" })).text());
    observed.push(await (await fetch(`${url}/telegram/${tg.botUser.id}`, { method: "POST", body: "x" })).text());

    await until(() => tg.sent({ chatId: dm.id }).length >= 5 && sl.sent().length >= 2 && dc.sent().length >= 2, 30_000, "replies on every platform");
    await sleep(1500); // retries of the 401'd replies
    await app.gateway.idle();
    for (const p of ["/metrics", "/healthz", "/healthz?ready=1", "/api/sessions", "/api/bindings", `/api/console/history?chatId=x`]) await get(p);
    const sessions = JSON.parse(observed.at(-4)!) as Array<{ id: string }> | { sessions?: Array<{ id: string }> };
    for (const s of (Array.isArray(sessions) ? sessions : (sessions.sessions ?? [])).slice(0, 10)) await get(`/api/sessions/${s.id}`);
    const chat = [...tg.sent().map((s) => s.text), ...sl.sent().map((s) => s.text), ...dc.sent().map((s) => s.content ?? "")];
    const modelSaw = ai.requests.map((r) => JSON.stringify(r.body)).join("\n");
    const all = [...lines, ...observed, ...chat].join("\n");
    const found = leaks(m, all);
    report("secrets-in-process", {
      logLines: lines.length,
      sent: { telegram: tg.sent().length, slack: sl.sent().length, discord: dc.sent().length },
      discordReady: discord.health().ready,
      httpBodies: observed.length,
      chatMessages: chat.length,
      bytesSearched: Buffer.byteLength(all),
      markers: Object.keys(m).length,
      occurrences: found.length,
      modelRequests: ai.requests.length,
      agentNoticesWithKeyError: chat.filter((c) => /credentials|OPENAI_API_KEY/.test(c)).length,
      leaks: found.slice(0, 5),
      markerInModelRequests: leaks(m, modelSaw).length,
    });
    expect(found).toEqual([]);
  }, 120_000);

  it("a real `node bin/switchboard.mjs serve`: stdout and stderr", async () => {
    const m = markers();
    const tg = new FakeTelegram({ token: m.TELEGRAM_BOT_TOKEN });
    const sl = new FakeSlack({ botToken: m.SLACK_BOT_TOKEN, signingSecret: m.SLACK_SIGNING_SECRET });
    const dc = new FakeDiscord({ token: m.DISCORD_BOT_TOKEN, heartbeatIntervalMs: 1000 });
    await Promise.all([tg.start(), sl.start(), dc.start()]);
    const ai = await FakeOpenAi.start();
    for (let i = 0; i < 40; i++) ai.enqueue(keyRejected(m.OPENAI_API_KEY));
    cleanup.push(
      () => ai.close(),
      () => dc.close(),
      () => sl.close(),
      () => tg.close(),
    );
    const env = {
      ...process.env,
      ...m,
      DATABASE_URL: await freshDatabaseUrl("sqlite"),
      HTTP_PORT: "0",
      LOG_LEVEL: "debug",
      DM_POLICY: "open",
      REFLECT_EVERY_TURNS: "0",
      OPENAI_BASE_URL: ai.baseUrl,
      OPENAI_MODEL: "fake-model",
      TELEGRAM_API_ROOT: tg.apiRoot,
      TELEGRAM_MODE: "polling",
      SLACK_API_URL: sl.apiUrl,
      DISCORD_API_URL: dc.apiUrl,
    };
    let out = "";
    const child: ChildProcess = spawn(process.execPath, ["bin/switchboard.mjs", "serve"], { env, stdio: ["ignore", "pipe", "pipe"] });
    cleanup.unshift(() => child.exitCode === null && child.kill("SIGKILL"));
    child.stdout!.on("data", (d) => (out += String(d)));
    child.stderr!.on("data", (d) => (out += String(d)));
    const ready = await until(() => /switchboard ready on (http:\/\/[0-9.:]+)/.test(out) || child.exitCode !== null, 30_000, "serve ready");
    const url = /switchboard ready on (http:\/\/[0-9.:]+)/.exec(out)?.[1];
    expect(ready && url, out.slice(0, 2000)).toBeTruthy();
    // Traffic: a Telegram DM (the agent's 401 becomes a notice), forged Slack posts, a genuine Slack DM, a Discord DM, junk.
    const alice = tg.user("Alice");
    tg.userMessage({ chat: tg.privateChat(alice), from: alice, text: "hello from telegram" });
    tg.rateLimitNext("sendMessage", 1, 1);
    const events = `${url}/slack/events`;
    const forged: string[] = [];
    for (const o of [{ secret: "nope" }, { timestamp: 1 }, { signature: "v0=00" }])
      forged.push((await sl.postEvent(events, sl.events.message({ channel: "D0DM0001", user: "U0ALICE", text: "x" }), o)).body);
    sl.failNext("chat.postMessage", { error: "invalid_auth" });
    await sl.postEvent(events, sl.events.message({ channel: "D0DM0001", user: "U0ALICE", text: "hi slack" }));
    const dAlice = dc.user("alice");
    await sleep(1000);
    dc.userMessage({ channel: dc.dmChannel(dAlice), author: dAlice, content: "hi discord" });
    const junk: string[] = [];
    for (const [path, body] of [
      ["/slack/events", "x"],
      ["/api/console/messages", "{"],
      ["/telegram/123456", "{}"],
      ["/nope", ""],
    ] as const) {
      junk.push(await (await fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body })).text());
    }
    const metrics = await (await fetch(`${url}/metrics`)).text();
    await until(() => tg.sent().length >= 1 && sl.sent().length >= 1, 20_000, "replies");
    await sleep(2000);
    child.kill("SIGTERM");
    await until(() => child.exitCode !== null, 15_000, "serve to exit");
    const chat = [...tg.sent().map((s) => s.text), ...sl.sent().map((s) => s.text), ...dc.sent().map((s) => s.content ?? "")];
    const all = [out, metrics, ...forged, ...junk, ...chat].join("\n");
    const found = leaks(m, all);
    report("secrets-serve-process", {
      outputLines: out.split("\n").length,
      outputBytes: out.length,
      chatMessages: chat.length,
      bytesSearched: Buffer.byteLength(all),
      occurrences: found.length,
      exitCode: child.exitCode,
      leaks: found.slice(0, 5),
    });
    expect(found).toEqual([]);
  }, 120_000);
});
