import type { Insertable, Selectable } from "kysely";
import type { Database } from "./db.js";
import type { DB } from "./generated/kysely/db.js";

/** One stored Slack installation, tokens included: only the token resolver (Bolt's authorize) reads it. */
export type SlackInstallationRecord = Selectable<DB["SlackInstallation"]>;
/** What an install (or SLACK_BOT_TOKEN at start) writes; installedAt and updatedAt are the store's. */
export type NewSlackInstallation = Omit<Insertable<DB["SlackInstallation"]>, "installedAt" | "updatedAt">;
/** What a listing shows: everything but the tokens (operators see who, what and until when, never a secret). */
export type SlackInstallationSummary = Omit<SlackInstallationRecord, "botToken" | "botRefreshToken" | "userToken" | "userRefreshToken">;
/** What a token refresh (oauth.v2.access, grant_type=refresh_token) replaces: the bot token, the next refresh token, the expiry. */
export type SlackBotTokenRotation = { botToken: string; botRefreshToken: string; botExpiresAt: Date };

/**
 * Where an installation lives: a workspace by (enterpriseId or "", teamId),
 * an Enterprise Grid org-wide install by (enterpriseId, "").
 */
export interface SlackInstallationKey {
  enterpriseId: string;
  teamId: string;
}

const SUMMARY_COLUMNS = [
  "enterpriseId",
  "teamId",
  "isEnterpriseInstall",
  "teamName",
  "enterpriseName",
  "appId",
  "botUserId",
  "botId",
  "botScopes",
  "botExpiresAt",
  "installerUserId",
  "userScopes",
  "userExpiresAt",
  "source",
  "installedAt",
  "updatedAt",
] as const satisfies ReadonlyArray<keyof SlackInstallationSummary>;

/**
 * The Slack app's installations, one row per workspace or org. A reinstall
 * replaces the row's tokens and scopes but keeps when it was first installed.
 * Tokens are secrets: they leave this store only through `find`, for the
 * caller that authorizes a Slack call with them.
 */
export class SlackInstallationStore {
  constructor(readonly db: Database) {}

  async save(i: NewSlackInstallation): Promise<void> {
    const now = new Date();
    const row = { ...i, installedAt: now, updatedAt: now };
    await this.db.exec(
      "slack-installation-save",
      this.db.q
        .insertInto("SlackInstallation")
        .values(row)
        .onConflict((oc) =>
          oc.columns(["enterpriseId", "teamId"]).doUpdateSet((eb) => ({
            // Every column but the key and installedAt takes the new install's value (null where it has none).
            isEnterpriseInstall: eb.ref("excluded.isEnterpriseInstall"),
            teamName: eb.ref("excluded.teamName"),
            enterpriseName: eb.ref("excluded.enterpriseName"),
            appId: eb.ref("excluded.appId"),
            botToken: eb.ref("excluded.botToken"),
            botUserId: eb.ref("excluded.botUserId"),
            botId: eb.ref("excluded.botId"),
            botScopes: eb.ref("excluded.botScopes"),
            botRefreshToken: eb.ref("excluded.botRefreshToken"),
            botExpiresAt: eb.ref("excluded.botExpiresAt"),
            installerUserId: eb.ref("excluded.installerUserId"),
            userToken: eb.ref("excluded.userToken"),
            userScopes: eb.ref("excluded.userScopes"),
            userRefreshToken: eb.ref("excluded.userRefreshToken"),
            userExpiresAt: eb.ref("excluded.userExpiresAt"),
            source: eb.ref("excluded.source"),
            updatedAt: eb.ref("excluded.updatedAt"),
          })),
        ),
    );
  }

  async find(key: SlackInstallationKey): Promise<SlackInstallationRecord | undefined> {
    const [r] = await this.db.query(
      "slack-installation-find",
      this.db.q.selectFrom("SlackInstallation").selectAll().where("enterpriseId", "=", key.enterpriseId).where("teamId", "=", key.teamId),
    );
    return r;
  }

  /**
   * Replaces the bot token after a refresh, only where the row still holds
   * the refresh token that was used (a compare-and-set: a refresh token is
   * good once, so a second writer, or a reinstall in between, changes
   * nothing). True when the one row changed.
   */
  async rotate(key: SlackInstallationKey, usedRefreshToken: string, next: SlackBotTokenRotation): Promise<boolean> {
    const n = await this.db.exec(
      "slack-installation-rotate",
      this.db.q
        .updateTable("SlackInstallation")
        .set({ botToken: next.botToken, botRefreshToken: next.botRefreshToken, botExpiresAt: next.botExpiresAt, updatedAt: new Date() })
        .where("enterpriseId", "=", key.enterpriseId)
        .where("teamId", "=", key.teamId)
        .where("botRefreshToken", "=", usedRefreshToken),
    );
    return n === 1;
  }

  /** Every installation without its tokens, oldest first. */
  async list(): Promise<SlackInstallationSummary[]> {
    return this.db.query(
      "slack-installation-list",
      this.db.q.selectFrom("SlackInstallation").select(SUMMARY_COLUMNS).orderBy("installedAt").orderBy("enterpriseId").orderBy("teamId"),
    );
  }

  /** Deletes the installation (its tokens with it); false when there was none (already uninstalled). */
  async delete(key: SlackInstallationKey): Promise<boolean> {
    const n = await this.db.exec(
      "slack-installation-delete",
      this.db.q.deleteFrom("SlackInstallation").where("enterpriseId", "=", key.enterpriseId).where("teamId", "=", key.teamId),
    );
    return n > 0;
  }
}

/**
 * The install flow's OAuth `state` values. `consume` deletes the row and
 * says whether it was there and unexpired: the delete is the use, so a state
 * is used once even when two processes on one database get the same callback.
 */
export class SlackOAuthStateStore {
  constructor(readonly db: Database) {}

  async issue(id: string, expiresAt: Date): Promise<void> {
    await this.db.exec("slack-oauth-state-issue", this.db.q.insertInto("SlackOAuthState").values({ id, expiresAt, createdAt: new Date() }));
  }

  /** True once for a state issued and not expired at `now`; false for one unknown, used or expired. */
  async consume(id: string, now: Date = new Date()): Promise<boolean> {
    const n = await this.db.exec("slack-oauth-state-consume", this.db.q.deleteFrom("SlackOAuthState").where("id", "=", id).where("expiresAt", ">", now));
    return n === 1;
  }

  /** How many states are issued and unexpired at `now` (install links open). */
  async live(now: Date = new Date()): Promise<number> {
    const [r] = await this.db.query(
      "slack-oauth-state-live",
      this.db.q
        .selectFrom("SlackOAuthState")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("expiresAt", ">", now),
    );
    return Number(r?.n ?? 0);
  }

  /** Drops the states that expired unused before `now`; returns how many. */
  async prune(now: Date = new Date()): Promise<number> {
    return this.db.exec("slack-oauth-state-prune", this.db.q.deleteFrom("SlackOAuthState").where("expiresAt", "<=", now));
  }
}
