import { describe, expect, it } from "vitest";
import { INSTALL_PATH, OAUTH_REDIRECT_PATH, slackInstallRoutes } from "../../../adapters/slack/install-routes.js";
import type { HttpHandler, HttpRequest } from "../../../adapters/types.js";
import { silentLogger } from "../../../src/log.js";
import { SlackInstallationStore, SlackOAuthStateStore } from "../../../src/store/slack-installations.js";
import { FakeSlack } from "../../fakes/index.js";
import { openTestDb } from "../../support/db.js";

const get = (path: string, query: Record<string, string> = {}, cookie?: string): HttpRequest => ({
  method: "GET",
  path,
  headers: cookie ? { cookie } : {},
  rawBody: Buffer.alloc(0),
  query: new URLSearchParams(query),
  params: {},
});

/**
 * Two gateway processes on one PostgreSQL (two Databases, two
 * InstallProviders, one state secret): a state issued by one is accepted by
 * the other, and when the same callback reaches both at once exactly one
 * installs; the other is refused before any oauth.v2.access call.
 */
describe("the install flow's state across processes on PostgreSQL", () => {
  it("the same callback on two processes at once: one install, one code exchange, one 400", async () => {
    const sl = new FakeSlack();
    await sl.start();
    const a = await openTestDb("postgresql");
    const b = await openTestDb("postgresql", { url: a.url });
    try {
      const routes = (db: typeof a.db): { install: HttpHandler; callback: HttpHandler } =>
        slackInstallRoutes({
          clientId: sl.oauth.clientId,
          clientSecret: sl.oauth.clientSecret,
          stateSecret: "one-state-secret-for-all-processes",
          scopes: ["chat:write"],
          redirectUri: `https://gateway.example${OAUTH_REDIRECT_PATH}`,
          apiUrl: sl.apiUrl,
          installations: new SlackInstallationStore(db),
          states: new SlackOAuthStateStore(db),
          log: silentLogger,
        });
      const p1 = routes(a.db);
      const p2 = routes(b.db);
      for (let round = 0; round < 5; round++) {
        const started = await p1.install(get(INSTALL_PATH));
        const state = new URL(started.headers!.location!).searchParams.get("state")!;
        const cookie = started.headers!["set-cookie"]!.split(";")[0]!;
        const code = { code: sl.oauth.code({ teamId: `T${round}` }), state };
        const answers = await Promise.all([p1.callback(get(OAUTH_REDIRECT_PATH, code, cookie)), p2.callback(get(OAUTH_REDIRECT_PATH, code, cookie))]);
        expect(answers.map((r) => r.status).sort()).toEqual([200, 400]);
        expect(String(answers.find((r) => r.status === 400)!.body)).toContain("already used");
      }
      expect(sl.calls.filter((c) => c.method === "oauth.v2.access")).toHaveLength(5);
      expect((await new SlackInstallationStore(b.db).list()).map((r) => r.teamId).sort()).toEqual(["T0", "T1", "T2", "T3", "T4"]);
    } finally {
      await b.close();
      await a.close();
      await sl.close();
    }
  });
});
