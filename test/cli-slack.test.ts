import { describe, expect, it } from "vitest";
import { slackManifest } from "../adapters/index.js";
import { runCli } from "../src/cli.js";
import { Registry } from "../src/session/index.js";
import { IdentityStore, openDatabase, SessionStore, SlackInstallationStore, TranscriptStore } from "../src/store/index.js";
import { freshMigratedSqliteUrl } from "./support/db.js";
import { workspaceInstall } from "./store/slack-installations.cases.js";

/** The CLI in process, as bin/switchboard.mjs runs it (with the manifest builder it hands in). */
async function cli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(args, { out: (l) => out.push(l), err: (l) => err.push(l) }, { LOG_LEVEL: "silent", ...env }, { slackManifest });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

/** Two workspaces and an org-wide install, and a DM session in each workspace. */
async function seeded(): Promise<{ url: string; sessions: Record<string, string> }> {
  const url = await freshMigratedSqliteUrl();
  const db = await openDatabase({ url });
  try {
    const store = new SlackInstallationStore(db);
    await store.save(workspaceInstall("TGONE", { botExpiresAt: new Date("2030-01-02T03:04:05.000Z"), botRefreshToken: "xoxe-1-refresh-secret" }));
    await store.save(workspaceInstall("TKEEP", { source: "env" }));
    await store.save(workspaceInstall("", { enterpriseId: "E0ORG", isEnterpriseInstall: true, enterpriseName: "Acme org", botUserId: "UORGBOT" }));
    const registry = new Registry(new SessionStore(db));
    const sessions: Record<string, string> = {};
    for (const team of ["TGONE", "TKEEP"]) {
      const user = await new IdentityStore(db).userId("slack", `U${team}USER`);
      const s = await registry.resolveChatChannel({ agentId: `U${team}BOT`, userId: user, channel: `slack:${team}:U${team}BOT:dm:D${team}` });
      await new TranscriptStore(db).append(s.id, [{ role: "user", content: `hello ${team}` }], { turnIncrement: 1 });
      sessions[team] = s.id;
    }
    return { url, sessions };
  } finally {
    await db.close();
  }
}

async function state(url: string): Promise<{ teams: string[]; sessions: string[] }> {
  const db = await openDatabase({ url });
  try {
    const teams = (await new SlackInstallationStore(db).list()).map((i) => i.teamId || i.enterpriseId).sort();
    const sessions = (await db.query("s", db.q.selectFrom("Session").select("channel"))).map((r) => r.channel).sort();
    return { teams, sessions };
  } finally {
    await db.close();
  }
}

describe("switchboard slack", () => {
  it("installations: a table of team (or org), name, bot user, scopes, installed at, expiry, source; never a token", async () => {
    const { url } = await seeded();
    const human = await cli(["slack", "installations"], { DATABASE_URL: url });
    expect(human.code, human.err).toBe(0);
    const lines = human.out.split("\n");
    expect(lines[0]).toMatch(/^TEAM\s+NAME\s+BOT USER\s+SCOPES\s+INSTALLED\s+TOKEN EXPIRES\s+SOURCE$/);
    expect(lines.find((l) => l.startsWith("TGONE"))).toMatch(
      /TGONE\s+team TGONE\s+UTGONEBOT\s+chat:write,im:history\s+\S+Z\s+2030-01-02T03:04:05.000Z\s+oauth$/,
    );
    expect(lines.find((l) => l.startsWith("TKEEP"))).toMatch(/does not expire\s+env$/);
    expect(lines.find((l) => l.startsWith("E0ORG"))).toMatch(/^E0ORG \(org\)\s+Acme org\s+UORGBOT/);
    const json = await cli(["slack", "installations", "--json"], { DATABASE_URL: url });
    const doc = JSON.parse(json.out);
    expect(doc.installations.map((i: { key: string }) => i.key)).toEqual(["TGONE", "TKEEP", "E0ORG"]);
    expect(doc.installations[0]).toMatchObject({
      orgWide: false,
      botUserId: "UTGONEBOT",
      scopes: ["chat:write", "im:history"],
      expiresAt: "2030-01-02T03:04:05.000Z",
      source: "oauth",
    });
    expect(doc.installations[2]).toMatchObject({ orgWide: true, enterpriseId: "E0ORG", name: "Acme org" });
    for (const out of [human.out, json.out]) expect(out).not.toMatch(/xox[a-z]-|secret/);
  });

  it("uninstall <team>: deletes the installation and keeps transcripts; --purge also deletes the workspace's data, no other's", async () => {
    const { url } = await seeded();
    const kept = await cli(["slack", "uninstall", "TGONE"], { DATABASE_URL: url });
    expect(kept.code, kept.err).toBe(0);
    expect(kept.out).toMatch(/Removed the Slack installation of workspace TGONE \(team TGONE\)/);
    expect(kept.out).toMatch(/Transcripts and sessions are kept/);
    expect(await state(url)).toEqual({ teams: ["E0ORG", "TKEEP"], sessions: ["slack:TGONE:UTGONEBOT:dm:DTGONE", "slack:TKEEP:UTKEEPBOT:dm:DTKEEP"] });

    const again = await cli(["slack", "uninstall", "TGONE", "--json"], { DATABASE_URL: url });
    expect(again.code).toBe(1);
    expect(JSON.parse(again.out)).toEqual({ ok: false, error: { code: "NotFound", message: expect.stringMatching(/No Slack installation matches TGONE/) } });

    const { url: url2 } = await seeded();
    const purged = await cli(["slack", "uninstall", "TGONE", "--purge", "--json"], { DATABASE_URL: url2 });
    expect(purged.code, purged.out).toBe(0);
    const doc = JSON.parse(purged.out);
    expect(doc.uninstalled).toMatchObject({ key: "TGONE", orgWide: false });
    expect(doc.purged.teams).toEqual(["TGONE"]);
    expect(doc.purged.deleted).toMatchObject({ Session: 1, Message: 1, Binding: 1, User: 1 });
    expect(await state(url2)).toEqual({ teams: ["E0ORG", "TKEEP"], sessions: ["slack:TKEEP:UTKEEPBOT:dm:DTKEEP"] });
  });

  it("uninstall with SLACK_PURGE_ON_UNINSTALL=true purges; an org-wide install is named by its enterprise id", async () => {
    const { url } = await seeded();
    const r = await cli(["slack", "uninstall", "TGONE"], { DATABASE_URL: url, SLACK_PURGE_ON_UNINSTALL: "true" });
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/Purged TGONE: .*Session 1/);
    const org = await cli(["slack", "uninstall", "E0ORG"], { DATABASE_URL: url });
    expect(org.code, org.err).toBe(0);
    expect(org.out).toMatch(/org-wide install of E0ORG \(Acme org\)/);
    expect(await state(url)).toEqual({ teams: ["TKEEP"], sessions: ["slack:TKEEP:UTKEEPBOT:dm:DTKEEP"] });
    const usage = await cli(["slack", "uninstall"], { DATABASE_URL: url });
    expect(usage.code).toBe(2);
  });

  it("manifest: the app manifest for HTTP mode under PUBLIC_URL, for Socket Mode without URLs; HTTP mode without PUBLIC_URL names it", async () => {
    const http = await cli(["slack", "manifest"], { PUBLIC_URL: "https://bot.example.com" });
    expect(http.code, http.err).toBe(0);
    const m = JSON.parse(http.out);
    expect(m.settings.event_subscriptions.request_url).toBe("https://bot.example.com/slack/events");
    expect(m.oauth_config.scopes.bot).toContain("files:read");
    expect(m.oauth_config.redirect_urls).toBeUndefined();
    const socket = await cli(["slack", "manifest", "--json"], {
      SLACK_BOT_TOKEN: "xoxb-1-2",
      SLACK_APP_TOKEN: "xapp-1-2",
      SLACK_SCOPES: "chat:write,commands",
    });
    expect(socket.code, socket.out).toBe(0);
    expect(JSON.parse(socket.out)).toMatchObject({
      settings: { socket_mode_enabled: true, interactivity: { is_enabled: true } },
      oauth_config: { scopes: { bot: ["chat:write", "commands"] } },
    });
    expect(socket.out).not.toContain("request_url");
    const missing = await cli(["slack", "manifest"], {});
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/^Config: PUBLIC_URL is required/);
  });
});
