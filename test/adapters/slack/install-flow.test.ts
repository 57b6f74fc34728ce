import http from "node:http";
import type { AddressInfo } from "node:net";
import { InstallProvider, type Logger, LogLevel } from "@slack/oauth";
import { afterEach, describe, expect, it, vi } from "vitest";
import { DatabaseInstallationStore } from "../../../adapters/slack/installation-store.js";
import { SingleUseStateStore, STATE_LIFETIME_SECONDS } from "../../../adapters/slack/oauth-state.js";
import { SlackInstallationStore, SlackOAuthStateStore } from "../../../src/store/slack-installations.js";
import { FakeSlack } from "../../fakes/index.js";
import { openTestDb, type TestDb } from "../../support/db.js";

const REDIRECT_PATH = "/slack/oauth_redirect";
const quiet: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  setLevel: () => undefined,
  getLevel: () => LogLevel.ERROR,
  setName: () => undefined,
};

/**
 * The real InstallProvider (install path, callback, code exchange, auth.test)
 * over the database's installation and state stores, against the Slack
 * fake's oauth.v2.access. The HTTP server here only hands requests to the
 * provider; what is judged is the state's rules and what gets stored.
 */
async function installHarness() {
  const sl = new FakeSlack();
  await sl.start();
  const t: TestDb = await openTestDb("sqlite");
  const rows = new SlackInstallationStore(t.db);
  const states = new SlackOAuthStateStore(t.db);
  let base = "";
  const provider = new InstallProvider({
    clientId: sl.oauth.clientId,
    clientSecret: sl.oauth.clientSecret,
    stateStore: new SingleUseStateStore("state-secret-for-tests", states),
    installationStore: new DatabaseInstallationStore(rows),
    directInstall: true,
    // The refusals are the tests' subject; InstallProvider's own error lines would only be noise here.
    logger: quiet,
    clientOptions: { slackApiUrl: sl.apiUrl, retryConfig: { retries: 0 } },
  });
  const server = http.createServer((req, res) => {
    const opts = { scopes: ["chat:write", "im:history"], redirectUri: `${base}${REDIRECT_PATH}` };
    if (req.url?.startsWith("/slack/install")) return void provider.handleInstallPath(req, res, {}, opts);
    void provider.handleCallback(req, res, {
      success: (installation, _o, _req, r) => {
        r.writeHead(200, { "content-type": "text/plain" }).end(`installed in ${installation.team?.id ?? installation.enterprise?.id}`);
      },
      failure: (err, _o, _req, r) => {
        r.writeHead(400, { "content-type": "text/plain" }).end(`refused: ${err.message}`);
      },
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  /** What a browser gets from /slack/install: the state on Slack's authorize URL, and its cookie. */
  const startInstall = async () => {
    const res = await fetch(`${base}/slack/install`, { redirect: "manual" });
    expect(res.status).toBe(302);
    const state = new URL(res.headers.get("location")!).searchParams.get("state")!;
    const cookie = res.headers.get("set-cookie")!.split(";")[0]!;
    return { state, cookie };
  };
  const callback = (query: Record<string, string>, cookie?: string) =>
    fetch(`${base}${REDIRECT_PATH}?${new URLSearchParams(query)}`, { headers: cookie ? { cookie } : {} }).then(async (r) => ({
      status: r.status,
      text: await r.text(),
    }));
  const exchanges = () => sl.calls.filter((c) => c.method === "oauth.v2.access").length;
  const close = async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await t.close();
    await sl.close();
  };
  return { sl, rows, startInstall, callback, exchanges, close };
}

describe("the OAuth install flow's state (InstallProvider over the database)", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("two workspaces install through /slack/install and the callback; each row holds its own token from oauth.v2.access", async () => {
    const h = await installHarness();
    try {
      for (const teamId of ["T1", "T2"]) {
        const { state, cookie } = await h.startInstall();
        const r = await h.callback({ code: h.sl.oauth.code({ teamId, scopes: ["chat:write", "im:history"] }), state }, cookie);
        expect(r).toEqual({ status: 200, text: `installed in ${teamId}` });
      }
      expect(h.exchanges()).toBe(2);
      const [a, b] = await Promise.all([h.rows.find({ enterpriseId: "", teamId: "T1" }), h.rows.find({ enterpriseId: "", teamId: "T2" })]);
      expect(a!.botToken).not.toBe(b!.botToken);
      // The tokens are the ones the fake issued to each team, with the bot ids auth.test named.
      expect(h.sl.oauth.tokens.get(a!.botToken)?.grant.teamId).toBe("T1");
      expect(h.sl.oauth.tokens.get(b!.botToken)?.grant.teamId).toBe("T2");
      expect(a).toMatchObject({ botUserId: "UT1BOT", botId: "BT1", installerUserId: "UT1ADMIN", botScopes: "chat:write,im:history", source: "oauth" });
    } finally {
      await h.close();
    }
  });

  it("a missing state is refused: 400, nothing stored, no oauth.v2.access call", async () => {
    const h = await installHarness();
    try {
      const { cookie } = await h.startInstall();
      const r = await h.callback({ code: h.sl.oauth.code({ teamId: "T1" }) }, cookie);
      expect(r.status).toBe(400);
      expect(r.text).toMatch(/missing the state/);
      expect(h.exchanges()).toBe(0);
      expect(await h.rows.list()).toEqual([]);
    } finally {
      await h.close();
    }
  });

  it("a reused state is refused the second time, even with the browser's cookie and a fresh code", async () => {
    const h = await installHarness();
    try {
      const { state, cookie } = await h.startInstall();
      expect((await h.callback({ code: h.sl.oauth.code({ teamId: "T1" }), state }, cookie)).status).toBe(200);
      const again = await h.callback({ code: h.sl.oauth.code({ teamId: "T2" }), state }, cookie);
      expect(again.status).toBe(400);
      expect(again.text).toMatch(/already used/);
      expect(h.exchanges()).toBe(1);
      expect((await h.rows.list()).map((r) => r.teamId)).toEqual(["T1"]);
    } finally {
      await h.close();
    }
  });

  it("an expired state (10 minutes on) is refused", async () => {
    const h = await installHarness();
    try {
      vi.useFakeTimers({ toFake: ["Date"] });
      vi.setSystemTime(new Date("2030-01-01T00:00:00.000Z"));
      const { state, cookie } = await h.startInstall();
      vi.setSystemTime(new Date(Date.parse("2030-01-01T00:00:00.000Z") + STATE_LIFETIME_SECONDS * 1000));
      const r = await h.callback({ code: h.sl.oauth.code({ teamId: "T1" }), state }, cookie);
      expect(r.status).toBe(400);
      expect(r.text).toMatch(/expired/);
      expect(h.exchanges()).toBe(0);
      expect(await h.rows.list()).toEqual([]);
    } finally {
      await h.close();
    }
  });

  it("a state from another browser (no cookie, or another install's cookie) is refused", async () => {
    const h = await installHarness();
    try {
      const mine = await h.startInstall();
      const theirs = await h.startInstall();
      const code = h.sl.oauth.code({ teamId: "T1" });
      for (const cookie of [undefined, theirs.cookie]) {
        const r = await h.callback({ code, state: mine.state }, cookie);
        expect(r.status).toBe(400);
        expect(r.text).toMatch(/not for this browser session/);
      }
      expect(h.exchanges()).toBe(0);
      expect(await h.rows.list()).toEqual([]);
    } finally {
      await h.close();
    }
  });

  it("a forged state (its cookie set to match, but not signed by this gateway) is refused", async () => {
    const h = await installHarness();
    try {
      const { state } = await h.startInstall();
      const [body] = state.split(".");
      for (const forged of [`${body}.AAAA`, "not-a-state", `${body}.${state.split(".")[1]}.x`]) {
        const r = await h.callback({ code: h.sl.oauth.code({ teamId: "T1" }), state: forged }, `slack-app-oauth-state=${forged}`);
        expect(r.status).toBe(400);
        expect(r.text).toMatch(/not one this gateway signed/);
      }
      expect(h.exchanges()).toBe(0);
    } finally {
      await h.close();
    }
  });
});
