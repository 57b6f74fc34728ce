/**
 * GET /api/slack/installations over HTTP on the gateway's own server, reading
 * a real SQLite file: the installations are listed, their tokens never are.
 */
import { afterEach, describe, expect, it } from "vitest";
import { HttpServer } from "../../src/gateway/http/server.js";
import { mountSlackInstallationsApi } from "../../src/gateway/http/slack-installations-api.js";
import { silentLogger } from "../../src/log.js";
import { SlackInstallationStore } from "../../src/store/index.js";
import { openTestDb, type TestDb } from "../support/db.js";
import { workspaceInstall } from "../store/slack-installations.cases.js";

let open: { http: HttpServer; t: TestDb } | undefined;
afterEach(async () => {
  await open?.http.close();
  await open?.t.close();
  open = undefined;
});

async function serve(): Promise<{ base: string; store: SlackInstallationStore }> {
  const t = await openTestDb("sqlite");
  const store = new SlackInstallationStore(t.db);
  const http = new HttpServer({ log: silentLogger });
  mountSlackInstallationsApi((m, p, h) => http.route(m, p, h), store);
  const addr = await http.listen(0, "127.0.0.1");
  open = { http, t };
  return { base: `http://127.0.0.1:${addr.port}`, store };
}

describe("GET /api/slack/installations", () => {
  it("lists every installation (workspace and org-wide) with team, name, bot user, installed at, expiry; no token in the body", async () => {
    const { base, store } = await serve();
    expect(await (await fetch(`${base}/api/slack/installations`)).json()).toEqual({ installations: [] });
    const tokens = ["xoxb-T1-bot-token-secret", "xoxe-1-refresh-secret", "xoxp-user-token-secret", "xoxe-1-user-refresh-secret"];
    await store.save(
      workspaceInstall("T1", {
        botToken: tokens[0]!,
        botRefreshToken: tokens[1]!,
        botExpiresAt: new Date("2030-01-01T00:00:00.000Z"),
        userToken: tokens[2]!,
        userRefreshToken: tokens[3]!,
        userScopes: "users:read",
      }),
    );
    await store.save(
      workspaceInstall("", { enterpriseId: "E1", isEnterpriseInstall: true, enterpriseName: "Acme", botUserId: "UORG", botToken: "xoxb-org-secret" }),
    );
    const r = await fetch(`${base}/api/slack/installations`);
    expect(r.status).toBe(200);
    const text = await r.text();
    for (const t of [...tokens, "xoxb-org-secret"]) expect(text).not.toContain(t);
    expect(text).not.toMatch(/token/i);
    const body = JSON.parse(text);
    expect(body.installations).toEqual([
      {
        teamId: "T1",
        enterpriseId: "",
        orgWide: false,
        name: "team T1",
        appId: "A0APP",
        botUserId: "UT1BOT",
        scopes: ["chat:write", "im:history"],
        installerUserId: "UT1ADMIN",
        source: "oauth",
        installedAt: expect.stringMatching(/Z$/),
        expiresAt: "2030-01-01T00:00:00.000Z",
      },
      expect.objectContaining({ teamId: "", enterpriseId: "E1", orgWide: true, name: "Acme", botUserId: "UORG", expiresAt: null }),
    ]);
  });
});
