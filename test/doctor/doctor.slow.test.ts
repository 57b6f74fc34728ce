/**
 * `switchboard doctor` as an operator runs it: the real CLI in its own
 * process, against the platform fakes and the fake model server over
 * loopback. It passes when everything is right, and each broken dependency
 * fails with its own fix, without printing a token.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SLACK_SCOPES } from "../../src/doctor/slack.js";
import { FakeDiscord } from "../fakes/discord.js";
import { completionReply, FakeOpenAi, statusReply } from "../fakes/openai.js";
import { FakeSlack } from "../fakes/slack.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { freshDatabaseUrl } from "../support/db.js";

const run = promisify(execFile);
const bin = path.resolve("bin/switchboard.mjs");

interface Check {
  id: string;
  status: "pass" | "warn" | "fail" | "skip";
  detail: string;
  fix?: string;
}

async function doctor(env: Record<string, string>, args: string[] = ["--json"]): Promise<{ code: number; stdout: string; stderr: string }> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(TELEGRAM|DISCORD|SLACK|OPENAI|OPERATOR|HTTP_HOST|DATABASE_URL)/.test(k)));
  try {
    const r = await run(process.execPath, [bin, "doctor", ...args], { env: { ...clean, LOG_LEVEL: "silent", ...env }, timeout: 120_000 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

const byId = (stdout: string): Map<string, Check> => {
  const doc = JSON.parse(stdout) as { ok: boolean; checks: Check[] };
  return new Map(doc.checks.map((c) => [c.id, c]));
};

const TG_TOKEN = "123456789:AAH-doctor-telegram-token-1234567";
const DC_TOKEN = "MTIz.doctor-discord-token.abcdefghijklmnop";
const SL_TOKEN = "xoxb-1111-2222-doctorslacktoken";
const SL_APP = "xapp-1-A0FAKEAPP-3333-doctorapptoken";
const AI_KEY = "sk-doctor-model-key-0123456789";
const OPERATOR_TOKEN = "operator-token-doctor-0123456789";
const SECRETS = [
  TG_TOKEN,
  DC_TOKEN,
  SL_TOKEN,
  SL_APP,
  AI_KEY,
  OPERATOR_TOKEN,
  "wrong-telegram",
  "wrong-discord",
  "xoxb-wrong",
  "doctor-telegram-token",
  "doctor-discord-token",
  "doctorslacktoken",
  "doctor-model-key",
  "doctor-signing-secret",
];

describe("switchboard doctor", () => {
  let tg: FakeTelegram;
  let dc: FakeDiscord;
  let sl: FakeSlack;
  let ai: FakeOpenAi;
  let dbUrl: string;
  const webhookUrl = "https://bot.example.com/telegram/123456789";

  beforeAll(async () => {
    tg = new FakeTelegram({ token: TG_TOKEN });
    dc = new FakeDiscord({ token: DC_TOKEN });
    sl = new FakeSlack({ botToken: SL_TOKEN, appToken: SL_APP });
    await Promise.all([tg.start(), dc.start(), sl.start()]);
    ai = await FakeOpenAi.start();
    dbUrl = await freshDatabaseUrl("sqlite");
    const m = await run(process.execPath, [bin, "migrate"], { env: { ...process.env, DATABASE_URL: dbUrl } });
    expect(m.stdout).toMatch(/Applied/);
  });
  afterAll(async () => {
    await Promise.all([tg?.close(), dc?.close(), sl?.close(), ai?.close()]);
  });

  const setWebhook = async (url: string) => {
    const r = await fetch(`${tg.apiRoot}/bot${TG_TOKEN}/setWebhook`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ url, secret_token: "whsecret" }),
    });
    expect(((await r.json()) as { ok: boolean }).ok).toBe(true);
  };

  const base = () => ({
    DATABASE_URL: dbUrl,
    TELEGRAM_BOT_TOKEN: TG_TOKEN,
    TELEGRAM_API_ROOT: tg.apiRoot,
    TELEGRAM_MODE: "webhook",
    TELEGRAM_WEBHOOK_URL: webhookUrl,
    TELEGRAM_WEBHOOK_SECRET: "whsecret",
    DISCORD_BOT_TOKEN: DC_TOKEN,
    DISCORD_API_URL: dc.apiUrl,
    SLACK_BOT_TOKEN: SL_TOKEN,
    SLACK_APP_TOKEN: SL_APP,
    SLACK_API_URL: sl.apiUrl,
    OPENAI_BASE_URL: ai.baseUrl,
    OPENAI_API_KEY: AI_KEY,
    OPENAI_MODEL: "fake-model",
    HTTP_HOST: "0.0.0.0",
    OPERATOR_TOKEN,
  });

  it("passes when every dependency is right, with real calls to each", async () => {
    await setWebhook(webhookUrl);
    ai.enqueue(completionReply("OK"));
    const before = ai.requests.length;
    const r = await doctor(base());
    expect(r.stderr).toBe("");
    const checks = byId(r.stdout);
    expect([...checks.values()].filter((c) => c.status !== "pass")).toEqual([]);
    expect([...checks.keys()].sort()).toEqual(
      [
        "config",
        "database",
        "discord.intent",
        "discord.token",
        "exposure",
        "model.answer",
        "model.list",
        "slack.scopes",
        "slack.socket",
        "slack.token",
        "telegram.token",
        "telegram.webhook",
      ].sort(),
    );
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).ok).toBe(true);

    // The calls happened, against the fakes, with the configured credentials.
    expect(tg.calls.map((c) => c.method)).toEqual(expect.arrayContaining(["getMe", "getWebhookInfo"]));
    expect(dc.restCalls("GET /applications/@me").length).toBeGreaterThan(0);
    expect(sl.callsTo("auth.test").at(-1)!.token).toBe(SL_TOKEN);
    expect(ai.modelListCalls).toBeGreaterThan(0);
    const completion = ai.requests.slice(before).find((q) => q.url.endsWith("/chat/completions"))!;
    expect(completion.body).toMatchObject({ model: "fake-model", max_tokens: 1, stream: false });
    expect(completion.headers.authorization).toBe(`Bearer ${AI_KEY}`);
    // The probe row is gone again.
    const { default: Sqlite } = await import("better-sqlite3");
    const db = new Sqlite(dbUrl.slice("file:".length));
    expect(db.prepare(`SELECT COUNT(*) AS n FROM "AdapterState" WHERE "key" LIKE 'doctor:%'`).get()).toEqual({ n: 0 });
    db.close();
    for (const s of SECRETS) expect(r.stdout).not.toContain(s);
  });

  it("fails with the right fix for wrong tokens, a model that does not answer and a console open on 0.0.0.0 without OPERATOR_TOKEN", async () => {
    // The hung model is the one wait on a clock here; every fake answers within milliseconds, so 4 s leaves room under load.
    ai.enqueue({ noHeaders: true });
    const env: Record<string, string> = {
      ...base(),
      TELEGRAM_BOT_TOKEN: "123456789:wrong-telegram-token",
      DISCORD_BOT_TOKEN: "wrong-discord.token.value",
      SLACK_BOT_TOKEN: "xoxb-wrong-token-value",
    };
    delete env.OPERATOR_TOKEN;
    const r = await doctor(env, ["--json", "--timeout", "4s"]);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout).ok).toBe(false);
    const checks = byId(r.stdout);
    expect(checks.get("telegram.token")).toMatchObject({
      status: "fail",
      detail: expect.stringContaining("refused the token"),
      fix: expect.stringContaining("@BotFather"),
    });
    expect(checks.get("discord.token")).toMatchObject({ status: "fail", detail: expect.stringContaining("401"), fix: expect.stringContaining("Reset Token") });
    expect(checks.get("slack.token")).toMatchObject({
      status: "fail",
      detail: expect.stringContaining("invalid_auth"),
      fix: expect.stringContaining("Bot User OAuth Token"),
    });
    expect(checks.get("model.list")!.status).toBe("pass");
    expect(checks.get("model.answer")).toMatchObject({
      status: "fail",
      detail: expect.stringContaining("did not answer"),
      fix: expect.stringContaining("model server is up"),
    });
    expect(checks.get("exposure")).toMatchObject({
      status: "fail",
      detail: expect.stringContaining("0.0.0.0"),
      fix: expect.stringContaining("OPERATOR_TOKEN"),
    });
    expect(checks.get("database")!.status).toBe("pass");
    for (const s of SECRETS) expect(r.stdout).not.toContain(s);

    // The same as a checklist for people: a FAIL line and its fix under it.
    ai.enqueue({ noHeaders: true });
    const human = await doctor(env, ["--timeout", "4s"]);
    expect(human.code).toBe(1);
    const lines = human.stdout.split("\n");
    const i = lines.findIndex((l) => l.startsWith("[FAIL] Exposure:"));
    expect(i).toBeGreaterThanOrEqual(0);
    expect(lines[i + 1]).toMatch(/^\s+fix: Set OPERATOR_TOKEN/);
    expect(human.stdout).toMatch(/\n6 checks failed\.\n$/);
    for (const s of SECRETS) expect(human.stdout).not.toContain(s);
  });

  it("fails with the right fix for a webhook URL mismatch, the Message Content intent off, a missing Slack scope, a refused model key and a missing database", async () => {
    await setWebhook("https://old.example.com/telegram/123456789");
    const dcOff = new FakeDiscord({ token: DC_TOKEN, applicationFlags: 0 });
    const slNarrow = new FakeSlack({ botToken: SL_TOKEN, scopes: FakeSlack.MANIFEST_SCOPES.filter((s) => s !== "reactions:write" && s !== "mpim:history") });
    await Promise.all([dcOff.start(), slNarrow.start()]);
    try {
      // OpenAI quotes the refused key in its 401: doctor must not repeat it.
      ai.enqueue(statusReply(401, {}, JSON.stringify({ error: { message: `Incorrect API key provided: ${AI_KEY}.`, code: "invalid_api_key" } })));
      const missing = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "doctor-")), "nope.db");
      const env = {
        ...base(),
        DISCORD_API_URL: dcOff.apiUrl,
        SLACK_API_URL: slNarrow.apiUrl,
        SLACK_APP_TOKEN: "",
        SLACK_SIGNING_SECRET: "doctor-signing-secret-123",
        DATABASE_URL: `file:${missing}`,
      };
      const r = await doctor(env);
      expect(r.code).toBe(1);
      const checks = byId(r.stdout);
      expect(checks.get("telegram.token")!.status).toBe("pass");
      expect(checks.get("telegram.webhook")).toMatchObject({
        status: "fail",
        detail: expect.stringMatching(/old\.example\.com.*TELEGRAM_WEBHOOK_URL is https:\/\/bot\.example\.com/),
        fix: expect.stringContaining("setWebhook"),
      });
      expect(checks.get("discord.token")!.status).toBe("pass");
      expect(checks.get("discord.intent")).toMatchObject({ status: "fail", fix: expect.stringContaining("Message Content Intent") });
      expect(checks.get("slack.scopes")).toMatchObject({
        status: "fail",
        detail: "The token lacks reactions:write, mpim:history.",
        fix: expect.stringContaining("reinstall"),
      });
      expect(checks.has("slack.socket")).toBe(false);
      expect(checks.get("model.answer")).toMatchObject({ status: "fail", fix: expect.stringContaining("OPENAI_API_KEY") });
      expect(checks.get("database")).toMatchObject({
        status: "fail",
        detail: expect.stringContaining("does not exist"),
        fix: expect.stringContaining("switchboard migrate"),
      });
      expect(fs.existsSync(missing)).toBe(false);
      expect(checks.get("exposure")!.status).toBe("pass");
      for (const s of SECRETS) expect(r.stdout).not.toContain(s);
    } finally {
      await Promise.all([dcOff.close(), slNarrow.close()]);
    }
  });

  it("in-process: polling mode wants no webhook, a webhook secret Telegram would refuse fails, and a stray TELEGRAM_WEBHOOK_URL warns", async () => {
    const { loadConfig } = await import("../../src/config.js");
    const { runDoctor } = await import("../../src/doctor/index.js");
    const only = (c: Awaited<ReturnType<typeof runDoctor>>) => new Map(c.filter((x) => x.id.startsWith("telegram")).map((x) => [x.id, x]));
    await fetch(`${tg.apiRoot}/bot${TG_TOKEN}/deleteWebhook`, { method: "POST" });
    const polling = only(await runDoctor(loadConfig({ DATABASE_URL: dbUrl, TELEGRAM_BOT_TOKEN: TG_TOKEN, TELEGRAM_API_ROOT: tg.apiRoot }), {}));
    expect(polling.get("telegram.webhook")).toMatchObject({ status: "pass", detail: expect.stringContaining("polling mode, no webhook registered") });
    expect(polling.has("telegram.mode")).toBe(false);

    await setWebhook(webhookUrl);
    const stray = only(
      await runDoctor(loadConfig({ DATABASE_URL: dbUrl, TELEGRAM_BOT_TOKEN: TG_TOKEN, TELEGRAM_API_ROOT: tg.apiRoot, TELEGRAM_WEBHOOK_URL: webhookUrl }), {}),
    );
    expect(stray.get("telegram.mode")).toMatchObject({ status: "warn", fix: expect.stringContaining("TELEGRAM_MODE=webhook") });
    expect(stray.get("telegram.webhook")).toMatchObject({ status: "warn", detail: expect.stringContaining("getUpdates is refused") });

    // The gateway refuses this secret at start; doctor reads the rest and names it.
    const { loadConfigLenient } = await import("../../src/config.js");
    const lenient = loadConfigLenient({ ...base(), TELEGRAM_WEBHOOK_SECRET: "has spaces!" });
    const badSecret = new Map((await runDoctor(lenient.config, {}, { problems: lenient.problems })).map((x) => [x.id, x]));
    expect(badSecret.get("config")).toMatchObject({
      status: "fail",
      detail: expect.stringContaining("TELEGRAM_WEBHOOK_SECRET"),
      fix: expect.stringContaining("TELEGRAM_WEBHOOK_SECRET"),
    });
    expect(JSON.stringify([...badSecret.values()])).not.toContain("has spaces!");
  });

  it("in-process: a model that wants max_completion_tokens (OpenAI's reasoning models) still passes", async () => {
    const { loadConfig } = await import("../../src/config.js");
    const { runDoctor } = await import("../../src/doctor/index.js");
    ai.enqueue(
      statusReply(
        400,
        {},
        JSON.stringify({
          error: {
            message: "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
            type: "invalid_request_error",
            code: "unsupported_parameter",
          },
        }),
      ),
      completionReply(""),
    );
    const before = ai.requests.length;
    const checks = await runDoctor(loadConfig({ DATABASE_URL: dbUrl, OPENAI_BASE_URL: ai.baseUrl, OPENAI_API_KEY: AI_KEY, OPENAI_MODEL: "fake-model" }), {});
    expect(checks.find((c) => c.id === "model.answer")).toMatchObject({ status: "pass" });
    expect(ai.requests.slice(before).map((q) => Object.keys(q.body).filter((k) => k.startsWith("max")))).toEqual([["max_tokens"], ["max_completion_tokens"]]);
  });

  it("the Slack scopes it asks for are the ones the README says the manifest grants (`switchboard slack manifest`)", () => {
    const readme = fs.readFileSync("README.md", "utf8");
    const block = /`SLACK_SCOPES` \(default: ([^)]*)\)/.exec(readme);
    expect(block).not.toBeNull();
    const listed = [...block![1]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]);
    expect([...SLACK_SCOPES]).toEqual(listed);
    expect([...FakeSlack.MANIFEST_SCOPES]).toEqual(listed);
  });
});
