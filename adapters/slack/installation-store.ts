/**
 * @slack/oauth's InstallationStore over the gateway's database (the
 * SlackInstallations port): what InstallProvider writes at the end of an
 * install and what its authorize reads to answer an event with its
 * workspace's token. Installation times are epoch seconds in @slack/oauth
 * and Dates in the database.
 */
import type { Installation, InstallationQuery, InstallationStore } from "@slack/oauth";
import { registerSecret } from "../../src/log.js";
import { AdapterError, type NewSlackInstallation, type SlackInstallationKey, type SlackInstallationRecord, type SlackInstallations } from "../types.js";

export class DatabaseInstallationStore implements InstallationStore {
  constructor(private readonly records: SlackInstallations) {}

  async storeInstallation<V extends "v1" | "v2">(installation: Installation<V, boolean>): Promise<void> {
    await this.records.save(installationRow(installation, "oauth"));
  }

  async fetchInstallation(query: InstallationQuery<boolean>): Promise<Installation<"v1" | "v2", boolean>> {
    const key = installationKey(query);
    const row = await this.records.find(key);
    // The message names the workspace only: Bolt logs it, and an unknown team is an operator's question.
    if (!row) throw new AdapterError("slack", "Rejected", `no Slack installation for ${describeKey(key)}: install the app there (GET /slack/install)`);
    return installationOf(row);
  }

  async deleteInstallation(query: InstallationQuery<boolean>): Promise<void> {
    await this.records.delete(installationKey(query));
  }
}

/** The row an installation is kept in; refused without a bot token (the gateway answers as the bot). */
export function installationRow(i: Installation<"v1" | "v2", boolean>, source: "oauth" | "env"): NewSlackInstallation {
  const bot = i.bot;
  if (!bot?.token || !bot.userId)
    throw new AdapterError("slack", "Rejected", "the Slack installation has no bot token: SLACK_SCOPES must ask for bot scopes (chat:write at least)");
  const isEnterpriseInstall = i.isEnterpriseInstall === true;
  const enterpriseId = i.enterprise?.id ?? "";
  const teamId = isEnterpriseInstall ? "" : (i.team?.id ?? "");
  if (isEnterpriseInstall ? !enterpriseId : !teamId)
    throw new AdapterError("slack", "Rejected", "the Slack installation names no workspace (team id) or, for an org-wide install, no enterprise id");
  for (const s of [bot.token, bot.refreshToken, i.user.token, i.user.refreshToken]) registerSecret(s);
  return {
    enterpriseId,
    teamId,
    isEnterpriseInstall,
    teamName: i.team?.name ?? null,
    enterpriseName: i.enterprise?.name ?? null,
    appId: i.appId ?? null,
    botToken: bot.token,
    botUserId: bot.userId,
    botId: bot.id,
    botScopes: bot.scopes.join(","),
    botRefreshToken: bot.refreshToken ?? null,
    botExpiresAt: fromEpochSeconds(bot.expiresAt),
    installerUserId: i.user.id,
    userToken: i.user.token ?? null,
    userScopes: i.user.scopes?.join(",") ?? null,
    userRefreshToken: i.user.refreshToken ?? null,
    userExpiresAt: fromEpochSeconds(i.user.expiresAt),
    source,
  };
}

/** The stored row as @slack/oauth's Installation (authVersion v2: the gateway installs with oauth.v2.access only). */
export function installationOf(r: SlackInstallationRecord): Installation<"v2", boolean> {
  for (const s of [r.botToken, r.botRefreshToken, r.userToken, r.userRefreshToken]) registerSecret(s ?? undefined);
  return {
    team: r.isEnterpriseInstall ? undefined : { id: r.teamId, ...(r.teamName !== null && { name: r.teamName }) },
    enterprise: r.enterpriseId ? { id: r.enterpriseId, ...(r.enterpriseName !== null && { name: r.enterpriseName }) } : undefined,
    user: {
      id: r.installerUserId,
      token: r.userToken ?? undefined,
      scopes: r.userScopes ? r.userScopes.split(",") : undefined,
      ...(r.userRefreshToken !== null && { refreshToken: r.userRefreshToken }),
      ...(r.userExpiresAt !== null && { expiresAt: toEpochSeconds(r.userExpiresAt) }),
    },
    bot: {
      token: r.botToken,
      id: r.botId,
      userId: r.botUserId,
      scopes: r.botScopes ? r.botScopes.split(",") : [],
      ...(r.botRefreshToken !== null && { refreshToken: r.botRefreshToken }),
      ...(r.botExpiresAt !== null && { expiresAt: toEpochSeconds(r.botExpiresAt) }),
    },
    ...(r.appId !== null && { appId: r.appId }),
    tokenType: "bot",
    isEnterpriseInstall: r.isEnterpriseInstall,
    authVersion: "v2",
  } as Installation<"v2", boolean>;
}

/** Where a query's installation lives: an org-wide install by its enterprise alone, a workspace by both ids. */
export function installationKey(q: InstallationQuery<boolean>): SlackInstallationKey {
  if (q.isEnterpriseInstall) {
    if (!q.enterpriseId) throw new AdapterError("slack", "Rejected", "an org-wide Slack installation query names no enterprise id");
    return { enterpriseId: q.enterpriseId, teamId: "" };
  }
  if (!q.teamId) throw new AdapterError("slack", "Rejected", "a Slack installation query names no team id");
  return { enterpriseId: q.enterpriseId ?? "", teamId: q.teamId };
}

function describeKey(k: SlackInstallationKey): string {
  if (!k.teamId) return `enterprise ${k.enterpriseId} (org-wide)`;
  return k.enterpriseId ? `team ${k.teamId} (enterprise ${k.enterpriseId})` : `team ${k.teamId}`;
}

function fromEpochSeconds(s: number | undefined): Date | null {
  return s === undefined ? null : new Date(s * 1000);
}

function toEpochSeconds(d: Date): number {
  return Math.floor(d.getTime() / 1000);
}
