import { slackInstallsByOAuth, type Config } from "../config.js";
import type { Database } from "../store/db.js";
import { type SlackInstallationSummary, SlackInstallationStore } from "../store/slack-installations.js";
import { purgeSlackWorkspace } from "../store/workspace-purge.js";
import { CliError, usageError, type Output } from "./output.js";

/** What `slack installations` shows of one installation: never a token (the store's listing has none). */
export interface InstallationView {
  /** The team id (T…), or the enterprise id (E…) of an org-wide install. */
  key: string;
  orgWide: boolean;
  enterpriseId: string | null;
  name: string | null;
  botUserId: string;
  scopes: string[];
  installerUserId: string;
  installedAt: string;
  /** ISO, or null for a token that does not expire. */
  expiresAt: string | null;
  source: string;
}

export function installationView(i: SlackInstallationSummary): InstallationView {
  const orgWide = i.teamId === "";
  return {
    key: orgWide ? i.enterpriseId : i.teamId,
    orgWide,
    enterpriseId: i.enterpriseId === "" ? null : i.enterpriseId,
    name: (orgWide ? i.enterpriseName : i.teamName) ?? null,
    botUserId: i.botUserId,
    scopes: i.botScopes.split(",").filter(Boolean),
    installerUserId: i.installerUserId,
    installedAt: i.installedAt.toISOString(),
    expiresAt: i.botExpiresAt?.toISOString() ?? null,
    source: i.source,
  };
}

/** A plain-text table: columns padded to their widest cell. */
function table(head: string[], rows: string[][]): string[] {
  const widths = head.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c]!.length)));
  const line = (cells: string[]) => cells.map((v, c) => (c === cells.length - 1 ? v : v.padEnd(widths[c]!))).join("  ");
  return [line(head), ...rows.map(line)];
}

async function listCommand(db: Database, out: Output): Promise<number> {
  const views = (await new SlackInstallationStore(db).list()).map(installationView);
  if (views.length === 0)
    return out.ok({ installations: [] }, ["No Slack installations. Install the app from PUBLIC_URL/slack/install (or set SLACK_BOT_TOKEN)."]);
  const rows = views.map((v) => [
    v.orgWide ? `${v.key} (org)` : v.key,
    v.name ?? "-",
    v.botUserId,
    v.scopes.join(","),
    v.installedAt,
    v.expiresAt ?? "does not expire",
    v.source,
  ]);
  return out.ok({ installations: views }, table(["TEAM", "NAME", "BOT USER", "SCOPES", "INSTALLED", "TOKEN EXPIRES", "SOURCE"], rows));
}

/** The installation a CLI argument names: a team id (T…, any enterprise) or an enterprise id (E…, its org-wide install). */
function matching(all: SlackInstallationSummary[], key: string): SlackInstallationSummary[] {
  return all.filter((i) => (i.teamId === "" ? i.enterpriseId === key : i.teamId === key));
}

async function uninstallCommand(db: Database, config: Config, key: string | undefined, purge: boolean, out: Output): Promise<number> {
  if (!key)
    throw usageError("slack uninstall needs the team id (T…) or, for an org-wide install, the enterprise id (E…): see `switchboard slack installations`");
  const store = new SlackInstallationStore(db);
  const found = matching(await store.list(), key);
  if (found.length === 0)
    throw new CliError(
      "NotFound",
      `No Slack installation matches ${key}. Run \`switchboard slack installations\` to see the team (T…) and enterprise (E…) ids.`,
    );
  if (found.length > 1)
    throw new CliError("Ambiguous", `${key} matches ${found.length} installations (the same team id under several enterprises); nothing was removed.`);
  const i = found[0]!;
  await store.delete({ enterpriseId: i.enterpriseId, teamId: i.teamId });
  const view = installationView(i);
  const doPurge = purge || config.SLACK_PURGE_ON_UNINSTALL;
  const purged = doPurge ? await purgeSlackWorkspace(db, { teamId: i.teamId, botUserId: i.botUserId }) : undefined;
  const what = `${view.orgWide ? "org-wide install of" : "workspace"} ${key}${view.name ? ` (${view.name})` : ""}`;
  const lines = [`Removed the Slack installation of ${what}: its tokens are gone from the database.`];
  if (purged) {
    const counts = Object.entries(purged.deleted).filter(([, n]) => n > 0);
    lines.push(
      `Purged ${purged.teams.length ? purged.teams.join(", ") : "no workspace's data (none recorded)"}: ${
        counts.length ? counts.map(([t, n]) => `${t} ${n}`).join(", ") : "nothing was stored"
      }.`,
    );
  } else lines.push("Transcripts and sessions are kept (--purge, or SLACK_PURGE_ON_UNINSTALL=true, deletes them).");
  lines.push("The app stays in the workspace until removed there (Slack: Manage apps → Remove app).");
  return out.ok({ uninstalled: view, purged: purged ?? null }, lines);
}

/**
 * What builds the Slack app manifest: adapters/slack/manifest.ts's slackManifest, handed in by the
 * composition root (bin/switchboard.mjs) as the adapters are, because src/ never imports adapters/.
 * It throws an error carrying `variable` (the setting to fix) when the settings cannot make one.
 */
export type SlackManifestBuilder = (s: {
  publicUrl?: string;
  socketMode: boolean;
  oauth: boolean;
  botScopes: readonly string[];
  userScopes?: readonly string[];
}) => Promise<object>;

async function manifestCommand(config: Config, build: SlackManifestBuilder | undefined, out: Output): Promise<number> {
  if (!build) throw new CliError("Failed", "this build has no Slack manifest builder: run the CLI through bin/switchboard.mjs (npx switchboard).");
  try {
    const manifest = await build({
      publicUrl: config.PUBLIC_URL,
      socketMode: config.SLACK_APP_TOKEN !== undefined,
      oauth: slackInstallsByOAuth(config),
      botScopes: config.SLACK_SCOPES,
      userScopes: config.SLACK_USER_SCOPES,
    });
    return out.ok(manifest, [JSON.stringify(manifest, null, 2)]);
  } catch (e) {
    if (e instanceof Error && typeof (e as { variable?: unknown }).variable === "string") throw new CliError("Config", e.message);
    throw e;
  }
}

/** `switchboard slack installations | uninstall <team> [--purge] | manifest`. */
export async function slackCommand(
  config: Config,
  ctx: { withDb: <T>(fn: (db: Database) => Promise<T>) => Promise<T>; manifest?: SlackManifestBuilder },
  sub: string | undefined,
  arg: string | undefined,
  o: { purge: boolean },
  out: Output,
): Promise<number> {
  const withDb = ctx.withDb;
  if (sub === "manifest") return manifestCommand(config, ctx.manifest, out);
  if (sub === "installations") return withDb((db) => listCommand(db, out));
  if (sub === "uninstall") return withDb((db) => uninstallCommand(db, config, arg, o.purge, out));
  throw usageError(sub ? `unknown slack command "${sub}"` : "slack needs a command: installations, uninstall <team> [--purge] or manifest");
}
