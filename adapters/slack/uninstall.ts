/**
 * A workspace removes the app: `app_uninstalled` (the app is gone) and
 * `tokens_revoked` (its bot token is, which leaves the app unable to act
 * there). Either deletes the installation's row, so every send to that
 * workspace fails at once as uninstalled (SlackWorkspaces.client), in any
 * order, any number of times, for a team already gone; the gateway keeps its
 * transcripts unless SLACK_PURGE_ON_UNINSTALL (SlackPorts.uninstalled).
 * Bolt hands both events over without authorizing them (their tokens are
 * already invalid), so the app they name (api_app_id) is checked here against
 * the installation's: one for another app is dropped (foreign_app) and
 * removes nothing.
 */
import type { App } from "@slack/bolt";
import type { Logger } from "../../src/log.js";
import type { AdapterContext, SlackInstallationKey } from "../types.js";
import type { Installed } from "./installed.js";
import { foreignApp } from "./intake.js";

/** The installation an uninstall event is about: the org's for an org-wide install, else the workspace's. */
export function uninstalledKey(context: Record<string, unknown>): SlackInstallationKey | undefined {
  const enterpriseId = typeof context.enterpriseId === "string" ? context.enterpriseId : "";
  const teamId = typeof context.teamId === "string" ? context.teamId : "";
  if (context.isEnterpriseInstall === true) return enterpriseId ? { enterpriseId, teamId: "" } : undefined;
  return teamId ? { enterpriseId, teamId } : undefined;
}

export function listenForUninstalls(app: App, installed: Installed, ctx: AdapterContext, log: Logger): void {
  const remove = async (body: unknown, context: Record<string, unknown>, why: "app_uninstalled" | "tokens_revoked"): Promise<void> => {
    const key = uninstalledKey(context);
    if (!key) {
      log.warn({ event: why }, "a Slack uninstall event named no workspace; nothing was removed");
      return;
    }
    const row = await installed.ports.installations.find(key);
    // Another app's uninstall (misrouted or forged) must not remove this one's installation, nor purge the workspace.
    if (row && foreignApp(body, row.appId ?? undefined, ctx, log)) return;
    if (row) installed.workspaces.forget(row.botToken);
    const removed = await installed.ports.installations.delete(key);
    log.info(
      { ...key, event: why, removed },
      removed
        ? "the Slack app was removed from a workspace: its tokens are deleted and replies still queued to it fail as uninstalled"
        : "a Slack uninstall event for a workspace with no installation here (already removed): nothing to do",
    );
    if (removed && row) await installed.ports.uninstalled?.({ ...key, botUserId: row.botUserId });
  };
  app.event("app_uninstalled", async ({ body, context }) => remove(body, context, "app_uninstalled"));
  app.event("tokens_revoked", async ({ body, event, context }) => {
    const bot = (event as { tokens?: { bot?: unknown } }).tokens?.bot;
    if (Array.isArray(bot) && bot.length > 0) return remove(body, context, "tokens_revoked");
    // Only user tokens: the bot keeps working.
    log.info({ teamId: context.teamId, event: "tokens_revoked" }, "a Slack workspace revoked user tokens only; the bot's installation stays");
  });
}
