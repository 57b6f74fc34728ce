import { expect, it } from "vitest";
import { type NewSlackInstallation, SlackInstallationStore, SlackOAuthStateStore } from "../../src/store/slack-installations.js";
import type { TestDb, TestProvider } from "../support/db.js";

/** A workspace install as the install flow writes it (tokens are made up; the fake's shape). */
export function workspaceInstall(teamId: string, over: Partial<NewSlackInstallation> = {}): NewSlackInstallation {
  return {
    enterpriseId: "",
    teamId,
    isEnterpriseInstall: false,
    teamName: `team ${teamId}`,
    enterpriseName: null,
    appId: "A0APP",
    botToken: `xoxb-${teamId}-secret`,
    botUserId: `U${teamId}BOT`,
    botId: `B${teamId}`,
    botScopes: "chat:write,im:history",
    botRefreshToken: null,
    botExpiresAt: null,
    installerUserId: `U${teamId}ADMIN`,
    userToken: null,
    userScopes: null,
    userRefreshToken: null,
    userExpiresAt: null,
    source: "oauth",
    ...over,
  };
}

/**
 * The Slack installations and the OAuth states on a real database of
 * `provider`: one row per (enterprise, team), a reinstall replaces tokens but
 * keeps installedAt, a listing never carries a token, a delete is idempotent,
 * and a state is consumed once, never after it expired.
 */
export function slackInstallationCases(provider: TestProvider, open: () => Promise<TestDb>): void {
  it(`installations: found by (enterprise, team), org-wide apart from a workspace of the org (${provider})`, async () => {
    const t = await open();
    try {
      const s = new SlackInstallationStore(t.db);
      await s.save(workspaceInstall("T1"));
      await s.save(workspaceInstall("T2"));
      await s.save(workspaceInstall("T3", { enterpriseId: "E1" }));
      await s.save(workspaceInstall("", { enterpriseId: "E1", isEnterpriseInstall: true, botToken: "xoxb-org-secret" }));
      expect((await s.find({ enterpriseId: "", teamId: "T1" }))?.botToken).toBe("xoxb-T1-secret");
      expect((await s.find({ enterpriseId: "", teamId: "T2" }))?.botToken).toBe("xoxb-T2-secret");
      // The same team id under an enterprise is another row than without one.
      expect(await s.find({ enterpriseId: "", teamId: "T3" })).toBeUndefined();
      expect((await s.find({ enterpriseId: "E1", teamId: "T3" }))?.botToken).toBe("xoxb-T3-secret");
      const org = await s.find({ enterpriseId: "E1", teamId: "" });
      expect(org).toMatchObject({ botToken: "xoxb-org-secret", isEnterpriseInstall: true });
      expect(org!.installedAt).toBeInstanceOf(Date);
      expect(await s.find({ enterpriseId: "", teamId: "T9" })).toBeUndefined();
    } finally {
      await t.close();
    }
  });

  it(`installations: a reinstall replaces tokens and scopes, clears what it lacks, keeps installedAt (${provider})`, async () => {
    const t = await open();
    try {
      const s = new SlackInstallationStore(t.db);
      const expires = new Date("2030-01-01T00:00:00.000Z");
      await s.save(workspaceInstall("T1", { botRefreshToken: "xoxe-1-refresh", botExpiresAt: expires }));
      const first = await s.find({ enterpriseId: "", teamId: "T1" });
      expect(first).toMatchObject({ botRefreshToken: "xoxe-1-refresh", botExpiresAt: expires, isEnterpriseInstall: false });
      await s.save(workspaceInstall("T1", { botToken: "xoxb-T1-new", botScopes: "chat:write" }));
      const second = await s.find({ enterpriseId: "", teamId: "T1" });
      expect(second).toMatchObject({ botToken: "xoxb-T1-new", botScopes: "chat:write", botRefreshToken: null, botExpiresAt: null });
      expect(second!.installedAt.getTime()).toBe(first!.installedAt.getTime());
      expect(second!.updatedAt.getTime()).toBeGreaterThanOrEqual(first!.updatedAt.getTime());
      expect(await s.list()).toHaveLength(1);
    } finally {
      await t.close();
    }
  });

  it(`installations: the listing carries no token; a delete is true once, then false (${provider})`, async () => {
    const t = await open();
    try {
      const s = new SlackInstallationStore(t.db);
      await s.save(workspaceInstall("T1", { botRefreshToken: "xoxe-1-refresh", userToken: "xoxp-user-secret", userRefreshToken: "xoxe-1-user" }));
      await s.save(workspaceInstall("T2"));
      const list = await s.list();
      expect(list.map((r) => r.teamId)).toEqual(["T1", "T2"]);
      const text = JSON.stringify(list);
      for (const secret of ["xoxb-", "xoxp-", "xoxe-"]) expect(text).not.toContain(secret);
      expect(list[0]).toMatchObject({ botUserId: "UT1BOT", botScopes: "chat:write,im:history", installerUserId: "UT1ADMIN", source: "oauth" });
      expect(await s.delete({ enterpriseId: "", teamId: "T1" })).toBe(true);
      expect(await s.delete({ enterpriseId: "", teamId: "T1" })).toBe(false);
      expect(await s.find({ enterpriseId: "", teamId: "T1" })).toBeUndefined();
      expect((await s.find({ enterpriseId: "", teamId: "T2" }))?.botToken).toBe("xoxb-T2-secret");
    } finally {
      await t.close();
    }
  });

  it(`OAuth states: consumed once, by one of two racers, never after expiry, never unknown (${provider})`, async () => {
    const t = await open();
    try {
      const s = new SlackOAuthStateStore(t.db);
      const now = new Date("2030-01-01T00:00:00.000Z");
      const in10 = new Date(now.getTime() + 10 * 60_000);
      await s.issue("state-a", in10);
      await s.issue("state-b", in10);
      const race = await Promise.all([s.consume("state-a", now), s.consume("state-a", now)]);
      expect(race.sort()).toEqual([false, true]);
      expect(await s.consume("state-a", now)).toBe(false);
      expect(await s.consume("never-issued", now)).toBe(false);
      // At its expiry it is refused, and stays refused.
      expect(await s.consume("state-b", in10)).toBe(false);
      expect(await s.prune(in10)).toBe(1);
      expect(await s.consume("state-b", now)).toBe(false);
    } finally {
      await t.close();
    }
  });
}
