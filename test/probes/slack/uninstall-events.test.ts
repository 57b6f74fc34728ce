/**
 * Probes: uninstall events (app_uninstalled, tokens_revoked) beyond what
 * workspaces-scenarios.ts covers (workspace installs, bot tokens revoked).
 *
 * - An org-wide (Enterprise Grid) install is removed by its app_uninstalled
 *   (sent from one workspace of the org, with the org-wide authorization).
 * - tokens_revoked naming user tokens only leaves the bot's installation.
 * - README (Slack Connect): "Events addressed to another app (api_app_id
 *   differs from this app's ...) are acknowledged and dropped". The uninstall
 *   events are events too, and the most destructive (with
 *   SLACK_PURGE_ON_UNINSTALL they delete every transcript of the workspace):
 *   one for another app must not remove this app's installation.
 */
import { describe, expect, it } from "vitest";
import { gateway, metric, replies } from "../../adapters/slack/workspaces-scenarios.js";

describe("probe: uninstall events", () => {
  it("app_uninstalled from a workspace of the org removes the org's installation; a workspace install elsewhere stays", async () => {
    const g = await gateway("sqlite");
    try {
      expect((await g.install({ enterpriseId: "E0ORGU", isEnterpriseInstall: true })).status).toBe(200);
      expect((await g.install({ teamId: "T0ALONE" })).status).toBe(200);
      const ws1 = g.sl.eventsFor({ teamId: "T0ORGWS1", enterpriseId: "E0ORGU", orgWide: true });
      const alone = g.sl.eventsFor({ teamId: "T0ALONE" });
      expect(await g.post(ws1.message({ channel: "D0ORGU01", user: "U0ORGU", text: "before" }))).toBe(200);
      expect(await replies(g, "D0ORGU01", 1)).toEqual(["echo: before"]);

      expect(await g.post(ws1.appUninstalled())).toBe(200);
      const rows = await g.app.db.query("probe-installations", g.app.db.q.selectFrom("SlackInstallation").select(["enterpriseId", "teamId"]).orderBy("teamId"));
      expect(rows).toEqual([{ enterpriseId: "", teamId: "T0ALONE" }]);

      const unknownBefore = await metric(g, "switchboard_inbound_total", 'outcome="unknown_workspace"');
      expect(await g.post(ws1.message({ channel: "D0ORGU01", user: "U0ORGU", text: "after" }))).toBe(200);
      expect(await metric(g, "switchboard_inbound_total", 'outcome="unknown_workspace"')).toBe(unknownBefore + 1);
      expect(await g.post(alone.message({ channel: "D0ALONE1", user: "U0ALONE", text: "still here" }))).toBe(200);
      expect(await replies(g, "D0ALONE1", 1)).toEqual(["echo: still here"]);
      expect(g.texts("D0ORGU01")).toEqual(["echo: before"]);
    } finally {
      await g.stop();
    }
  });

  it("tokens_revoked naming user tokens only: the bot's installation stays and the workspace is answered", async () => {
    const g = await gateway("sqlite");
    try {
      await g.install({ teamId: "T0USERREV" });
      const ev = g.sl.eventsFor({ teamId: "T0USERREV" });
      expect(await g.post(ev.tokensRevoked({ oauth: ["U0SOMEONE"] }))).toBe(200);
      const rows = await g.app.db.query("probe-installations", g.app.db.q.selectFrom("SlackInstallation").select("teamId"));
      expect(rows.map((r) => r.teamId)).toEqual(["T0USERREV"]);
      expect(await g.post(ev.message({ channel: "D0USRREV", user: "U0SOMEONE", text: "bot still here?" }))).toBe(200);
      expect(await replies(g, "D0USRREV", 1)).toEqual(["echo: bot still here?"]);
    } finally {
      await g.stop();
    }
  });

  it("app_uninstalled and tokens_revoked whose api_app_id is another app's leave this app's installation alone", async () => {
    const g = await gateway("sqlite");
    try {
      await g.install({ teamId: "T0KEEPME" });
      const ev = g.sl.eventsFor({ teamId: "T0KEEPME" });
      const foreign = { api_app_id: "A0OTHERAPP" };
      expect(await g.post(ev.callback({ type: "app_uninstalled" }, foreign))).toBe(200);
      expect(await g.post(ev.callback({ type: "tokens_revoked", tokens: { bot: ["UT0KEEPMEBOT"] } }, foreign))).toBe(200);
      const rows = await g.app.db.query("probe-installations", g.app.db.q.selectFrom("SlackInstallation").select("teamId"));
      expect(rows.map((r) => r.teamId)).toEqual(["T0KEEPME"]);
      // And the workspace is still answered.
      expect(await g.post(ev.message({ channel: "D0KEEP01", user: "U0KEEP", text: "still installed?" }))).toBe(200);
      expect(await replies(g, "D0KEEP01", 1)).toEqual(["echo: still installed?"]);
      expect(await metric(g, "switchboard_inbound_total", 'outcome="unknown_workspace"')).toBe(0);
    } finally {
      await g.stop();
    }
  });
});
