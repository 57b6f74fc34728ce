/**
 * The Slack fake's oauth.v2.access through the real WebClient: the code grant
 * (client credentials checked, a code good once, the documented answer), the
 * refresh grant of a rotating token (a refresh token good once, the next one
 * in the answer), and auth.test answering per issued token.
 */
import { webApi } from "@slack/bolt";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FakeSlack } from "./slack.js";

let sl: FakeSlack;
beforeEach(async () => {
  sl = new FakeSlack();
  await sl.start();
});
afterEach(async () => {
  await sl.close();
});

const client = (token?: string) => new webApi.WebClient(token, { slackApiUrl: sl.apiUrl, retryConfig: { retries: 0 } });
const creds = () => ({ client_id: sl.oauth.clientId, client_secret: sl.oauth.clientSecret });

describe("FakeSlack oauth.v2.access", () => {
  it("the code grant answers as Slack documents, once per code; wrong credentials are refused", async () => {
    const code = sl.oauth.code({ teamId: "T1", teamName: "One", scopes: ["chat:write", "im:history"] });
    const r = await client().oauth.v2.access({ ...creds(), code });
    expect(r).toMatchObject({
      ok: true,
      token_type: "bot",
      scope: "chat:write,im:history",
      bot_user_id: "UT1BOT",
      app_id: sl.identity.appId,
      team: { id: "T1", name: "One" },
      enterprise: null,
      is_enterprise_install: false,
      authed_user: { id: "UT1ADMIN" },
    });
    expect(r.access_token).toMatch(/^xoxb-/);
    expect(r.refresh_token).toBeUndefined();
    await expect(client().oauth.v2.access({ ...creds(), code })).rejects.toMatchObject({ data: { error: "invalid_code" } });
    const fresh = sl.oauth.code({ teamId: "T1" });
    await expect(client().oauth.v2.access({ ...creds(), client_secret: "wrong", code: fresh })).rejects.toMatchObject({ data: { error: "bad_client_secret" } });
    await expect(client().oauth.v2.access({ ...creds(), client_id: "9.9", code: fresh })).rejects.toMatchObject({ data: { error: "invalid_client_id" } });
  });

  it("auth.test answers for each issued token's own team; the tokens authorize Web API calls", async () => {
    const a = await client().oauth.v2.access({ ...creds(), code: sl.oauth.code({ teamId: "T1" }) });
    const b = await client().oauth.v2.access({ ...creds(), code: sl.oauth.code({ teamId: "T2" }) });
    expect(await client(a.access_token).auth.test()).toMatchObject({ team_id: "T1", user_id: "UT1BOT", bot_id: "BT1" });
    expect(await client(b.access_token).auth.test()).toMatchObject({ team_id: "T2", user_id: "UT2BOT", bot_id: "BT2" });
    await expect(client("xoxb-never-issued").auth.test()).rejects.toMatchObject({ data: { error: "invalid_auth" } });
  });

  it("a rotating token: expires_in and refresh_token, a refresh gives the next pair, a refresh token is good once", async () => {
    const first = await client().oauth.v2.access({ ...creds(), code: sl.oauth.code({ teamId: "T1", expiresIn: 43_200 }) });
    expect(first).toMatchObject({ expires_in: 43_200 });
    expect(first.access_token).toMatch(/^xoxe\.xoxb-/);
    const refreshed = await client().oauth.v2.access({ ...creds(), grant_type: "refresh_token", refresh_token: first.refresh_token! });
    expect(refreshed).toMatchObject({ ok: true, token_type: "bot", expires_in: 43_200, team: { id: "T1" } });
    expect(refreshed.access_token).not.toBe(first.access_token);
    expect(refreshed.refresh_token).not.toBe(first.refresh_token);
    await expect(client().oauth.v2.access({ ...creds(), grant_type: "refresh_token", refresh_token: first.refresh_token! })).rejects.toMatchObject({
      data: { error: "invalid_refresh_token" },
    });
  });

  it("an org-wide grant names the enterprise, no team", async () => {
    const r = await client().oauth.v2.access({ ...creds(), code: sl.oauth.code({ enterpriseId: "E1", isEnterpriseInstall: true }) });
    expect(r).toMatchObject({ team: null, enterprise: { id: "E1" }, is_enterprise_install: true });
    expect(await client(r.access_token).auth.test()).toMatchObject({ enterprise_id: "E1", is_enterprise_install: true });
  });
});
