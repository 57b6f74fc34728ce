import { afterEach, describe, expect, it, vi } from "vitest";
import { INSTALL_PATH, OAUTH_REDIRECT_PATH, slackInstallRoutes } from "../../../adapters/slack/install-routes.js";
import { STATE_LIFETIME_SECONDS } from "../../../adapters/slack/oauth-state.js";
import type { HttpHandler } from "../../../adapters/types.js";
import { SlackInstallationStore, SlackOAuthStateStore } from "../../../src/store/slack-installations.js";
import { FakeSlack } from "../../fakes/index.js";
import { captureLogger, RouteBridge } from "../../support/adapter-harness.js";
import { openTestDb, type TestDb } from "../../support/db.js";

/**
 * The install routes (adapters/slack/install-routes.ts) on the real
 * InstallProvider (install path, callback, code exchange, auth.test), over
 * the database's installation and state stores, against the Slack fake's
 * oauth.v2.access, served over HTTP as the gateway serves a route.
 */
async function installHarness(opts: { installToken?: string; maxOpenLinks?: number } = {}) {
  const sl = new FakeSlack();
  await sl.start();
  const t: TestDb = await openTestDb("sqlite");
  const rows = new SlackInstallationStore(t.db);
  const states = new SlackOAuthStateStore(t.db);
  const lines: string[] = [];
  const routes = new Map<string, HttpHandler>();
  const bridge = new RouteBridge(routes);
  const base = await bridge.start();
  const { install, callback: finish } = slackInstallRoutes({
    clientId: sl.oauth.clientId,
    clientSecret: sl.oauth.clientSecret,
    stateSecret: "state-secret-for-tests",
    scopes: ["chat:write", "im:history"],
    redirectUri: `${base}${OAUTH_REDIRECT_PATH}`,
    apiUrl: sl.apiUrl,
    installations: rows,
    states,
    log: captureLogger(lines, { name: "install-test" }),
    ...(opts.installToken !== undefined && { installToken: opts.installToken }),
    ...(opts.maxOpenLinks !== undefined && { maxOpenLinks: opts.maxOpenLinks }),
  });
  routes.set(`GET ${INSTALL_PATH}`, install);
  routes.set(`GET ${OAUTH_REDIRECT_PATH}`, finish);

  /** What a browser gets from /slack/install: the state on Slack's authorize URL, and its cookie. */
  const startInstall = async (query = "") => {
    const res = await fetch(`${base}${INSTALL_PATH}${query}`, { redirect: "manual" });
    expect(res.status).toBe(302);
    const state = new URL(res.headers.get("location")!).searchParams.get("state")!;
    const cookie = res.headers.get("set-cookie")!.split(";")[0]!;
    return { state, cookie };
  };
  const callback = (query: Record<string, string>, cookie?: string) =>
    fetch(`${base}${OAUTH_REDIRECT_PATH}?${new URLSearchParams(query)}`, { headers: cookie ? { cookie } : {} }).then(async (r) => ({
      status: r.status,
      text: await r.text(),
    }));
  const exchanges = () => sl.calls.filter((c) => c.method === "oauth.v2.access").length;
  const close = async () => {
    await bridge.close();
    await t.close();
    await sl.close();
  };
  const stateRows = async () => (await t.db.query("test-states", t.db.q.selectFrom("SlackOAuthState").select("id"))).length;
  return { sl, rows, base, lines, startInstall, callback, exchanges, stateRows, close };
}

describe("the OAuth install routes (InstallProvider over the database)", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("two workspaces install through /slack/install and the callback; each row holds its own token from oauth.v2.access", async () => {
    const h = await installHarness();
    try {
      for (const teamId of ["T1", "T2"]) {
        const { state, cookie } = await h.startInstall();
        const r = await h.callback({ code: h.sl.oauth.code({ teamId, scopes: ["chat:write", "im:history"] }), state }, cookie);
        expect(r.status).toBe(200);
        expect(r.text).toContain(`the workspace Team ${teamId} (${teamId}), as the bot user U${teamId}BOT`);
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

  it("/slack/install redirects to Slack's authorize page with the client id, scopes, redirect URL and state, and sets the state cookie", async () => {
    const h = await installHarness();
    try {
      const res = await fetch(`${h.base}${INSTALL_PATH}`, { redirect: "manual" });
      const to = new URL(res.headers.get("location")!);
      expect(`${to.origin}${to.pathname}`).toBe("https://slack.com/oauth/v2/authorize");
      expect(to.searchParams.get("client_id")).toBe(h.sl.oauth.clientId);
      expect(to.searchParams.get("scope")).toBe("chat:write,im:history");
      expect(to.searchParams.get("redirect_uri")).toBe(`${h.base}${OAUTH_REDIRECT_PATH}`);
      const cookie = res.headers.get("set-cookie")!;
      expect(cookie).toMatch(new RegExp(`^slack-app-oauth-state=${to.searchParams.get("state")!.replace(/[.]/g, "\\.")}; Secure; HttpOnly;`));
    } finally {
      await h.close();
    }
  });

  it("with an install token, /slack/install without it or with another is 403 and issues no state; with it, the flow works", async () => {
    const h = await installHarness({ installToken: "operator-install-token" });
    try {
      for (const q of ["", "?token=", "?token=operator-install-tokeX", "?token=operator-install-token-longer"]) {
        const res = await fetch(`${h.base}${INSTALL_PATH}${q}`, { redirect: "manual" });
        expect(res.status).toBe(403);
        expect(res.headers.get("set-cookie")).toBeNull();
        expect(await res.text()).toContain("installs only from the link its operator hands out");
      }
      const { state, cookie } = await h.startInstall("?token=operator-install-token");
      expect((await h.callback({ code: h.sl.oauth.code({ teamId: "T1" }), state }, cookie)).status).toBe(200);
      expect((await h.rows.list()).map((r) => r.teamId)).toEqual(["T1"]);
    } finally {
      await h.close();
    }
  });

  it("a code Slack refuses (already exchanged) is a 500 page that names no secret; the log has the reason, no token", async () => {
    const h = await installHarness();
    try {
      const code = h.sl.oauth.code({ teamId: "T1" });
      const first = await h.startInstall();
      expect((await h.callback({ code, state: first.state }, first.cookie)).status).toBe(200);
      const second = await h.startInstall();
      const r = await h.callback({ code, state: second.state }, second.cookie);
      expect(r.status).toBe(500);
      expect(r.text).toContain("could not be completed");
      const token = (await h.rows.find({ enterpriseId: "", teamId: "T1" }))!.botToken;
      for (const text of [r.text, h.lines.join("")]) {
        expect(text).not.toContain(token);
        expect(text).not.toContain(h.sl.oauth.clientSecret);
      }
      expect(h.lines.join("")).toContain("invalid_code");
    } finally {
      await h.close();
    }
  });

  it("opening an install link sweeps the states that expired unused", async () => {
    const h = await installHarness();
    try {
      vi.useFakeTimers({ toFake: ["Date"] });
      vi.setSystemTime(new Date("2030-01-01T00:00:00.000Z"));
      await h.startInstall();
      await h.startInstall();
      expect(await h.stateRows()).toBe(2);
      vi.setSystemTime(new Date(Date.parse("2030-01-01T00:00:00.000Z") + STATE_LIFETIME_SECONDS * 1000));
      await h.startInstall();
      expect(await h.stateRows()).toBe(1);
    } finally {
      await h.close();
    }
  });

  it("a stranger's loop on the open install link writes no more than the cap: past it 503 (Retry-After), no state; a used link frees a place", async () => {
    const h = await installHarness({ maxOpenLinks: 2 });
    try {
      const first = await h.startInstall();
      await h.startInstall();
      const refused = await fetch(`${h.base}${INSTALL_PATH}`, { redirect: "manual" });
      expect(refused.status).toBe(503);
      expect(refused.headers.get("retry-after")).toBe("60");
      expect(await refused.text()).toContain("Too many install links are open");
      expect(await h.stateRows()).toBe(2);
      expect(h.lines.join("\n")).toMatch(/too many are open \(set SLACK_INSTALL_TOKEN/);
      // One install finishes (its state is used): the link opens again.
      const done = await h.callback({ code: h.sl.oauth.code({ teamId: "T1", scopes: ["chat:write", "im:history"] }), state: first.state }, first.cookie);
      expect(done.status).toBe(200);
      await h.startInstall();
    } finally {
      await h.close();
    }
  });
});
