/**
 * No swallowed configuration error: every adapter variable, set to a bad
 * value next to an otherwise valid configuration for its platform, stops
 * `switchboard serve` with exit 1 and one line naming the variable. And an
 * adapter that is configured but cannot connect keeps /healthz?ready=1 at
 * 503, naming it.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CONFIG_KEYS, loadConfig } from "../src/config.js";
import { createApp, type App } from "../src/gateway/app.js";
import { silentLogger } from "../src/log.js";
import { telegramAdapterFromConfig } from "../adapters/telegram/index.js";
import { freshDatabaseUrl } from "./support/db.js";

const bin = path.resolve("bin/switchboard.mjs");
const TELEGRAM = { TELEGRAM_BOT_TOKEN: "123456789:FAKE-switchboard-test-token", TELEGRAM_API_ROOT: "http://127.0.0.1:9" };
const DISCORD = { DISCORD_BOT_TOKEN: "RkFLRS1ESVNDT1JELUJPVA.fake.switchboard-test-token", DISCORD_API_URL: "http://127.0.0.1:9/api" };
const SLACK = {
  SLACK_BOT_TOKEN: "xoxb-0000000001-0000000002-fakeswitchboardbot",
  SLACK_SIGNING_SECRET: "0123456789abcdef0123456789abcdef",
  SLACK_API_URL: "http://127.0.0.1:9/api/",
};

const SLACK_OAUTH = {
  SLACK_CLIENT_ID: "1111111111.2222222222",
  SLACK_CLIENT_SECRET: "abcdef0123456789",
  SLACK_STATE_SECRET: "0123456789abcdef0123456789abcdef",
  SLACK_SIGNING_SECRET: "0123456789abcdef0123456789abcdef",
  SLACK_API_URL: "http://127.0.0.1:9/api/",
  PUBLIC_URL: "https://bot.example.com",
};

/** [variable, bad value, the rest of its platform's settings] */
const TABLE: Array<[string, string, Record<string, string>]> = [
  ["CONSOLE_ENABLED", "maybe", {}],
  ["TELEGRAM_BOT_TOKEN", "not a token", {}],
  ["TELEGRAM_API_ROOT", "ftp://example.com", TELEGRAM],
  ["TELEGRAM_MODE", "push", TELEGRAM],
  ["TELEGRAM_WEBHOOK_SECRET", "has space", { ...TELEGRAM, TELEGRAM_MODE: "webhook" }],
  ["TELEGRAM_WEBHOOK_SECRET", "bang!", { ...TELEGRAM, TELEGRAM_MODE: "webhook" }],
  ["TELEGRAM_WEBHOOK_URL", "not a url", { ...TELEGRAM, TELEGRAM_MODE: "webhook", TELEGRAM_WEBHOOK_SECRET: "s3cret" }],
  ["DISCORD_BOT_TOKEN", "has spaces in it", {}],
  ["DISCORD_API_URL", "http://127.0.0.1:9/api/", DISCORD],
  ["DISCORD_ALLOW_BOTS", "sometimes", DISCORD],
  ["DISCORD_MENTION_ROLES", "admins,123", DISCORD],
  ["DISCORD_SHARD_ID", "x", { ...DISCORD, DISCORD_SHARD_COUNT: "2" }],
  ["DISCORD_SHARD_ID", "2", { ...DISCORD, DISCORD_SHARD_COUNT: "2" }],
  ["DISCORD_SHARD_COUNT", "two", { ...DISCORD, DISCORD_SHARD_ID: "0" }],
  ["DISCORD_SHARD_COUNT", "", { ...DISCORD, DISCORD_SHARD_ID: "0" }],
  ["SLACK_BOT_TOKEN", "xoxp-user-token", {}],
  ["SLACK_SIGNING_SECRET", "has space", SLACK],
  ["SLACK_SIGNING_SECRET", "", { ...SLACK, SLACK_SIGNING_SECRET: "" }],
  ["SLACK_APP_TOKEN", "xoxb-not-an-app-token", SLACK],
  ["SLACK_API_URL", "http://127.0.0.1:9/api", SLACK],
  ["SLACK_CLIENT_ID", "not-an-id", SLACK_OAUTH],
  ["SLACK_CLIENT_SECRET", "has space", SLACK_OAUTH],
  ["SLACK_CLIENT_SECRET", "", SLACK_OAUTH],
  ["SLACK_STATE_SECRET", "too-short", SLACK_OAUTH],
  ["SLACK_SCOPES", "chat:write,Not A Scope", SLACK_OAUTH],
  ["SLACK_USER_SCOPES", "bad!scope", SLACK_OAUTH],
  ["SLACK_INSTALL_TOKEN", "short", SLACK_OAUTH],
  ["SLACK_PURGE_ON_UNINSTALL", "sometimes", SLACK_OAUTH],
];

function serve(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "switchboard-settings-"));
  const child = spawn(process.execPath, [bin, "serve"], {
    env: { PATH: process.env.PATH ?? "", HOME: dir, DATABASE_URL: `file:${path.join(dir, "t.db")}`, HTTP_PORT: "0", LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  return new Promise((resolve) => {
    // A start that goes on (the old behaviour) would never exit: stop it once it says it is ready.
    const t = setInterval(() => {
      if (stdout.includes("switchboard ready")) child.kill("SIGKILL");
    }, 50);
    child.once("exit", (code) => {
      clearInterval(t);
      resolve({ code, stdout, stderr });
    });
  });
}

describe("a bad adapter setting stops the start", () => {
  it("the table covers every adapter variable", () => {
    const adapterVars = CONFIG_KEYS.filter((k) => /^(TELEGRAM|DISCORD|SLACK)_/.test(k) || k === "CONSOLE_ENABLED");
    expect(new Set(TABLE.map(([v]) => v))).toEqual(new Set(adapterVars));
  });

  it("each, in one line naming the variable (through bin/switchboard.mjs serve)", async () => {
    const results: string[] = [];
    const rows = [...TABLE];
    const failures: string[] = [];
    // Four at a time: each start is its own node process.
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let row = rows.shift(); row; row = rows.shift()) {
          const [name, value, rest] = row;
          const r = await serve({ ...rest, [name]: value });
          const lines = r.stderr.trim().split("\n").filter(Boolean);
          const ok = r.code === 1 && lines.length === 1 && lines[0]!.includes(name) && !r.stdout.includes("switchboard ready");
          results.push(`${ok ? "ok  " : "FAIL"} ${name}=${JSON.stringify(value)} -> exit ${r.code}: ${lines.join(" | ").slice(0, 200)}`);
          if (!ok) failures.push(name);
        }
      }),
    );
    console.log(results.sort().join("\n"));
    expect(failures).toEqual([]);
  }, 240_000);

  it("a good configuration of the same variables loads", () => {
    expect(() =>
      loadConfig({
        ...TELEGRAM,
        ...DISCORD,
        ...SLACK,
        DISCORD_SHARD_ID: "1",
        DISCORD_SHARD_COUNT: "2",
        DISCORD_MENTION_ROLES: "123456789012345678",
        TELEGRAM_MODE: "webhook",
        TELEGRAM_WEBHOOK_SECRET: "A-z_09",
        SLACK_APP_TOKEN: "xapp-1-A0FAKEAPP-3-abc",
      }),
    ).not.toThrow();
  });
});

describe("an adapter that is configured but cannot connect", () => {
  let app: App | undefined;
  afterEach(async () => {
    await app?.stop();
    app = undefined;
  });

  it("keeps /healthz?ready=1 at 503, naming it", async () => {
    const config = loadConfig({ DATABASE_URL: await freshDatabaseUrl("sqlite"), HTTP_PORT: "0", LOG_LEVEL: "silent", ...TELEGRAM });
    app = await createApp(config, { log: silentLogger, adapters: (c) => [telegramAdapterFromConfig(c)!] });
    const url = await app.start();
    const r = await fetch(`${url}/healthz?ready=1`);
    const body = (await r.json()) as { ready: boolean; down: string[] };
    expect(r.status).toBe(503);
    expect(body.ready).toBe(false);
    expect(body.down.join(" ")).toContain("telegram");
  });
});
