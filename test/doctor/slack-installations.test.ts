/**
 * `switchboard doctor` with SLACK_CLIENT_ID (installs by OAuth): each stored
 * installation is checked with its own bot token against the FakeSlack over
 * loopback (tokens issued by the fake's oauth.v2.access, as an install gets
 * them), in process, on a real SQLite file.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfigLenient } from "../../src/config.js";
import { runDoctor } from "../../src/doctor/index.js";
import { openDatabase, SlackInstallationStore } from "../../src/store/index.js";
import { FakeSlack } from "../fakes/slack.js";
import { freshMigratedSqliteUrl } from "../support/db.js";
import { workspaceInstall } from "../store/slack-installations.cases.js";

const SCOPES = ["chat:write", "im:history", "commands"];

describe("switchboard doctor: Slack installations", () => {
  let sl: FakeSlack;
  beforeAll(async () => {
    sl = new FakeSlack();
    await sl.start();
  });
  afterAll(async () => {
    await sl?.close();
  });

  /** A bot token for `teamId` from the fake's oauth.v2.access, the call an install makes. */
  async function installToken(teamId: string, scopes: string[]): Promise<string> {
    const code = sl.oauth.code({ teamId, scopes });
    const body = new URLSearchParams({ client_id: sl.oauth.clientId, client_secret: sl.oauth.clientSecret, code });
    const r = await fetch(`${sl.apiUrl}oauth.v2.access`, { method: "POST", body });
    const doc = (await r.json()) as { ok: boolean; access_token: string };
    expect(doc.ok).toBe(true);
    return doc.access_token;
  }

  const env = (url: string, over: Record<string, string> = {}) => ({
    DATABASE_URL: url,
    SLACK_CLIENT_ID: sl.oauth.clientId,
    SLACK_CLIENT_SECRET: "fakeclientsecret0123456789",
    SLACK_STATE_SECRET: "s".repeat(40),
    SLACK_SIGNING_SECRET: "signingsecret",
    SLACK_SCOPES: SCOPES.join(","),
    PUBLIC_URL: "https://bot.example.com",
    SLACK_API_URL: sl.apiUrl,
    ...over,
  });

  async function slackChecks(e: Record<string, string>) {
    const { config, problems } = loadConfigLenient(e);
    expect(problems).toEqual([]);
    const checks = await runDoctor(config, e, { timeoutMs: 5000 });
    return checks.filter((c) => c.id.startsWith("slack"));
  }

  it("no installations yet: a warning naming PUBLIC_URL/slack/install, and no single-token check without SLACK_BOT_TOKEN", async () => {
    const url = await freshMigratedSqliteUrl();
    const checks = await slackChecks(env(url));
    expect(checks).toEqual([
      {
        id: "slack.installations",
        title: "Slack installations",
        status: "warn",
        detail: "no installations yet: open https://bot.example.com/slack/install to install the app to a workspace.",
        fix: expect.stringContaining("https://bot.example.com/slack/install"),
      },
    ]);
  });

  it("one line per installation: valid, missing scopes, refused token, expired token (rotation failing)", async () => {
    const url = await freshMigratedSqliteUrl();
    const good = await installToken("T0GOOD", SCOPES);
    const narrow = await installToken("T0NARROW", ["chat:write"]);
    const rotating = await installToken("T0ROT", SCOPES);
    const db = await openDatabase({ url });
    const store = new SlackInstallationStore(db);
    await store.save(workspaceInstall("T0GOOD", { botToken: good, botUserId: "UT0GOODBOT" }));
    await store.save(workspaceInstall("T0NARROW", { botToken: narrow }));
    await store.save(workspaceInstall("T0GONE", { botToken: "xoxb-9-revoked-token-of-T0GONE" }));
    await store.save(workspaceInstall("T0ROT", { botToken: rotating, botRefreshToken: "xoxe-1-r", botExpiresAt: new Date("2001-01-01T00:00:00.000Z") }));
    await store.save(workspaceInstall("T0LATER", { botToken: good, botRefreshToken: "xoxe-1-r2", botExpiresAt: new Date("2100-01-01T00:00:00.000Z") }));
    await db.close();

    const checks = await slackChecks(env(url));
    const byId = Object.fromEntries(checks.map((c) => [c.id, c]));
    expect(Object.keys(byId).sort()).toEqual([
      "slack.installation.T0GONE",
      "slack.installation.T0GOOD",
      "slack.installation.T0LATER",
      "slack.installation.T0NARROW",
      "slack.installation.T0ROT",
    ]);
    expect(byId["slack.installation.T0GOOD"]).toMatchObject({ status: "pass", detail: expect.stringMatching(/token valid .*all 3 scopes .*does not expire/) });
    expect(byId["slack.installation.T0LATER"]).toMatchObject({ status: "pass", detail: expect.stringContaining("expires 2100-01-01T00:00:00.000Z") });
    expect(byId["slack.installation.T0NARROW"]).toMatchObject({ status: "fail", detail: expect.stringContaining("lacks im:history, commands") });
    expect(byId["slack.installation.T0NARROW"]!.fix).toContain("https://bot.example.com/slack/install");
    expect(byId["slack.installation.T0GONE"]).toMatchObject({ status: "fail", detail: expect.stringMatching(/auth\.test answered \w+/) });
    expect(byId["slack.installation.T0GONE"]!.fix).toContain("https://bot.example.com/slack/install");
    expect(byId["slack.installation.T0ROT"]).toMatchObject({
      status: "fail",
      detail: expect.stringContaining("rotation is failing (the gateway's log says why)"),
    });
    // No token in any line.
    const text = JSON.stringify(checks);
    for (const t of [good, narrow, rotating, "xoxb-9-revoked", "xoxe-1-r"]) expect(text).not.toContain(t);
  });

  it("with SLACK_BOT_TOKEN as well, the single-token checks run beside the installations'", async () => {
    const url = await freshMigratedSqliteUrl();
    const checks = await slackChecks(env(url, { SLACK_BOT_TOKEN: sl.botToken }));
    expect(checks.map((c) => c.id)).toEqual(["slack.token", "slack.scopes", "slack.installations"]);
  });
});
