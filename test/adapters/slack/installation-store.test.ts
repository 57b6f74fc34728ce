import { type Installation, InstallProvider } from "@slack/oauth";
import { describe, expect, it } from "vitest";
import { DatabaseInstallationStore } from "../../../adapters/slack/installation-store.js";
import { redactSecrets } from "../../../src/log.js";
import { SlackInstallationStore } from "../../../src/store/slack-installations.js";
import { openTestDb } from "../../support/db.js";

/** An Installation as InstallProvider builds it from an oauth.v2.access answer. */
function installation(teamId: string, over: Partial<Installation<"v2", boolean>> = {}): Installation<"v2", boolean> {
  return {
    team: { id: teamId, name: `team ${teamId}` },
    enterprise: undefined,
    user: { id: `U${teamId}ADMIN`, token: undefined, scopes: undefined },
    bot: { token: `xoxb-${teamId}-tokenvalue`, scopes: ["chat:write", "im:history"], id: `B${teamId}`, userId: `U${teamId}BOT` },
    appId: "A0APP",
    tokenType: "bot",
    isEnterpriseInstall: false,
    authVersion: "v2",
    ...over,
  };
}

async function withProvider(fn: (p: InstallProvider, store: DatabaseInstallationStore, rows: SlackInstallationStore) => Promise<void>) {
  const t = await openTestDb("sqlite");
  try {
    const rows = new SlackInstallationStore(t.db);
    const store = new DatabaseInstallationStore(rows);
    // The real InstallProvider: its authorize is what Bolt calls per event.
    const provider = new InstallProvider({ clientId: "1.2", clientSecret: "client-secret", stateSecret: "state-secret", installationStore: store });
    await fn(provider, store, rows);
  } finally {
    await t.close();
  }
}

describe("@slack/oauth's InstallationStore over the database", () => {
  it("InstallProvider.authorize resolves each workspace's own token, bot user and bot id", async () => {
    await withProvider(async (provider, store) => {
      await store.storeInstallation(installation("T1"));
      await store.storeInstallation(installation("T2"));
      const a = await provider.authorize({ teamId: "T1", enterpriseId: undefined, isEnterpriseInstall: false });
      const b = await provider.authorize({ teamId: "T2", enterpriseId: undefined, isEnterpriseInstall: false });
      expect(a).toMatchObject({ botToken: "xoxb-T1-tokenvalue", botUserId: "UT1BOT", botId: "BT1", teamId: "T1" });
      expect(b).toMatchObject({ botToken: "xoxb-T2-tokenvalue", botUserId: "UT2BOT", botId: "BT2", teamId: "T2" });
    });
  });

  it("an org-wide install answers for any workspace of its org, keyed by the enterprise id", async () => {
    await withProvider(async (provider, store, rows) => {
      await store.storeInstallation(installation("", { team: undefined, enterprise: { id: "E1", name: "Org" }, isEnterpriseInstall: true }));
      const r = await provider.authorize({ teamId: "T5", enterpriseId: "E1", isEnterpriseInstall: true });
      expect(r).toMatchObject({ botToken: "xoxb--tokenvalue", enterpriseId: "E1", teamId: "T5" });
      expect((await rows.list()).map((x) => [x.enterpriseId, x.teamId, x.isEnterpriseInstall])).toEqual([["E1", "", true]]);
      // A per-workspace query for a team of that org is not the org's row.
      await expect(provider.authorize({ teamId: "T5", enterpriseId: "E1", isEnterpriseInstall: false })).rejects.toThrow(/T5/);
    });
  });

  it("an unknown team is refused with a message naming the team and no token; after a delete the team is unknown", async () => {
    await withProvider(async (provider, store) => {
      await store.storeInstallation(installation("T1"));
      const err = await provider.authorize({ teamId: "T9", enterpriseId: undefined, isEnterpriseInstall: false }).catch((e: unknown) => e);
      expect(String((err as Error).message)).toMatch(/no Slack installation for team T9/);
      expect(String((err as Error).message)).not.toContain("xoxb-");
      await store.deleteInstallation({ teamId: "T1", enterpriseId: undefined, isEnterpriseInstall: false });
      // Twice, as app_uninstalled and tokens_revoked both may ask: the second finds nothing and is fine.
      await store.deleteInstallation({ teamId: "T1", enterpriseId: undefined, isEnterpriseInstall: false });
      await expect(provider.authorize({ teamId: "T1", enterpriseId: undefined, isEnterpriseInstall: false })).rejects.toThrow(/team T1/);
    });
  });

  it("rotating tokens round-trip: refresh token and expiry (epoch seconds) come back as stored", async () => {
    await withProvider(async (_provider, store) => {
      const expiresAt = Math.floor(Date.now() / 1000) + 86_400;
      const i = installation("T1");
      await store.storeInstallation({ ...i, bot: { ...i.bot!, refreshToken: "xoxe-1-refreshvalue", expiresAt } });
      const back = await store.fetchInstallation({ teamId: "T1", enterpriseId: undefined, isEnterpriseInstall: false });
      expect(back.bot).toMatchObject({ token: "xoxb-T1-tokenvalue", refreshToken: "xoxe-1-refreshvalue", expiresAt, scopes: ["chat:write", "im:history"] });
      expect(back).toMatchObject({ authVersion: "v2", appId: "A0APP", user: { id: "UT1ADMIN" }, team: { id: "T1", name: "team T1" } });
      // Stored tokens are masked in every log line from now on.
      expect(redactSecrets("token xoxb-T1-tokenvalue and xoxe-1-refreshvalue")).toBe("token [redacted] and [redacted]");
    });
  });

  it("an installation without a bot token is refused and nothing is stored", async () => {
    await withProvider(async (_provider, store, rows) => {
      const { bot: _bot, ...noBot } = installation("T1");
      await expect(store.storeInstallation(noBot)).rejects.toThrow(/no bot token/);
      await expect(store.storeInstallation(installation("", { team: undefined }))).rejects.toThrow(/names no workspace/);
      expect(await rows.list()).toEqual([]);
    });
  });
});
