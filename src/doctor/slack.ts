import type { Config } from "../config.js";
import { SLACK_DEFAULT_SCOPES } from "../config/platforms.js";
import { withExistingDatabase } from "../cli/database.js";
import { registerSecret } from "../log.js";
import { type SlackInstallationRecord, SlackInstallationStore } from "../store/slack-installations.js";
import { call, fail, hostOf, pass, remoteMessage, Unreachable, warn, type CheckResult } from "./check.js";

/** The bot scopes the README's manifest (and `switchboard slack manifest`) grants; test/doctor checks the two stay the same. */
export const SLACK_SCOPES = SLACK_DEFAULT_SCOPES;

const TOKEN_FIX = "Slack app → OAuth & Permissions → copy the Bot User OAuth Token (xoxb-…) into SLACK_BOT_TOKEN; reinstall the app if it was uninstalled.";

type SlackPost = (method: string, token: string) => ReturnType<typeof call>;

/** The Web API at SLACK_API_URL (or Slack's), one POST per method with the given token. */
function slackApi(config: Config, timeoutMs: number): { base: string; post: SlackPost } {
  const base = config.SLACK_API_URL ?? "https://slack.com/api/";
  const post: SlackPost = (method, token) =>
    call(`${base}${method}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/x-www-form-urlencoded" },
      body: "",
      timeoutMs,
    });
  return { base, post };
}

/** Of `wanted`, the scopes a token's comma-separated grant (auth.test's x-oauth-scopes) lacks. */
function missingScopes(granted: string, wanted: readonly string[]): string[] {
  const have = new Set(
    granted
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean),
  );
  return wanted.filter((s) => !have.has(s));
}

/** Where a workspace installs the app: PUBLIC_URL/slack/install. */
function installLink(config: Config): string {
  return config.PUBLIC_URL ? `${config.PUBLIC_URL.replace(/\/+$/, "")}/slack/install` : "PUBLIC_URL/slack/install";
}

/** Slack: the bot token (auth.test), its granted scopes (the x-oauth-scopes header), and the Socket Mode token when set. */
export async function checkSlack(config: Config, timeoutMs: number): Promise<CheckResult[]> {
  const { base, post } = slackApi(config, timeoutMs);
  const out: CheckResult[] = [];
  try {
    const r = await post("auth.test", config.SLACK_BOT_TOKEN!);
    const body = r.body as { ok?: boolean; error?: string; team?: string; user?: string; user_id?: string };
    if (!body.ok) {
      const auth = ["invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired", "not_allowed_token_type"].includes(String(body.error));
      return [
        fail(
          "slack.token",
          "Slack bot token",
          `auth.test answered ${body.error ?? r.status}${auth ? ": Slack refused the token" : ""}.`,
          auth ? TOKEN_FIX : `Check SLACK_API_URL (${remoteMessage(r.body)}).`,
        ),
      ];
    }
    out.push(pass("slack.token", "Slack bot token", `workspace ${body.team ?? "?"}, bot ${body.user ?? "?"} (${body.user_id ?? "?"}), ${r.ms} ms.`));
    out.push(scopesCheck(r.headers.get("x-oauth-scopes")));
    if (config.SLACK_APP_TOKEN) out.push(await socketCheck(post, config.SLACK_APP_TOKEN));
  } catch (e) {
    if (!(e instanceof Unreachable)) throw e;
    out.push(
      fail(
        "slack.token",
        "Slack bot token",
        `The Slack Web API at ${hostOf(base)} could not be reached: ${e.message}.`,
        "Check the network (outbound HTTPS to slack.com) or SLACK_API_URL.",
      ),
    );
  }
  return out;
}

/** The token's granted scopes (auth.test's x-oauth-scopes header) against the README manifest's. */
function scopesCheck(header: string | null): CheckResult {
  if (header === null)
    return fail(
      "slack.scopes",
      "Slack scopes",
      "auth.test did not report the token's scopes (no x-oauth-scopes header).",
      "Check SLACK_API_URL points at Slack's Web API.",
    );
  const missing = missingScopes(header, SLACK_SCOPES);
  return missing.length
    ? fail(
        "slack.scopes",
        "Slack scopes",
        `The token lacks ${missing.join(", ")}.`,
        "Add them under OAuth & Permissions → Bot Token Scopes (or use the manifest in the README), then reinstall the app to the workspace: the token gets the new scopes only then.",
      )
    : pass("slack.scopes", "Slack scopes", `all ${SLACK_SCOPES.length} scopes of the README's manifest granted.`);
}

/** The app-level token (SLACK_APP_TOKEN) opens a Socket Mode connection URL. */
async function socketCheck(post: SlackPost, appToken: string): Promise<CheckResult> {
  const s = await post("apps.connections.open", appToken);
  const sb = s.body as { ok?: boolean; error?: string };
  return sb.ok
    ? pass("slack.socket", "Slack Socket Mode", "the app-level token opens a Socket Mode connection URL.")
    : fail(
        "slack.socket",
        "Slack Socket Mode",
        `apps.connections.open answered ${sb.error ?? s.status}.`,
        "Slack app → Basic Information → App-Level Tokens: create one with connections:write and put it in SLACK_APP_TOKEN; and turn Socket Mode on (Settings → Socket Mode).",
      );
}

const REINSTALL = (config: Config) => `Reinstall the app to that workspace from ${installLink(config)} (its new token replaces this one).`;

/** One stored installation: its token's expiry, then auth.test with it (valid, and its scopes against SLACK_SCOPES). */
async function installationCheck(config: Config, post: SlackPost, i: SlackInstallationRecord, now: Date): Promise<CheckResult> {
  const key = i.teamId || i.enterpriseId;
  const id = `slack.installation.${key}`;
  const title = `Slack installation ${key}${i.teamId ? "" : " (org-wide)"}${(i.teamName ?? i.enterpriseName) ? ` ${i.teamName ?? i.enterpriseName}` : ""}`;
  if (i.botExpiresAt && i.botExpiresAt.getTime() <= now.getTime())
    return fail(
      id,
      title,
      `the bot token expired at ${i.botExpiresAt.toISOString()} and was not refreshed: rotation is failing (the gateway's log says why).`,
      `Check the gateway's log for the refresh error (SLACK_CLIENT_ID and SLACK_CLIENT_SECRET must be this app's); if the refresh token was revoked, ${REINSTALL(config).toLowerCase()}`,
    );
  const r = await post("auth.test", i.botToken);
  const body = r.body as { ok?: boolean; error?: string; user_id?: string };
  if (!body.ok) return fail(id, title, `auth.test answered ${body.error ?? r.status}: Slack refused the installation's bot token.`, REINSTALL(config));
  const missing = missingScopes(r.headers.get("x-oauth-scopes") ?? i.botScopes, config.SLACK_SCOPES);
  if (missing.length)
    return fail(id, title, `the token is valid but lacks ${missing.join(", ")} (SLACK_SCOPES).`, `${REINSTALL(config)} The install asks for SLACK_SCOPES.`);
  const expiry = i.botExpiresAt ? `token expires ${i.botExpiresAt.toISOString()} (refreshed before then)` : "token does not expire";
  return pass(
    id,
    title,
    `token valid (bot ${body.user_id ?? i.botUserId}), all ${config.SLACK_SCOPES.length} scopes of SLACK_SCOPES granted, ${expiry}, ${r.ms} ms.`,
  );
}

/**
 * With SLACK_CLIENT_ID (installs by OAuth): every stored installation, each checked with its own
 * token. None yet is a warning (nobody has installed the app), not a failure.
 */
export async function checkSlackInstallations(config: Config, timeoutMs: number, now: Date = new Date()): Promise<CheckResult[]> {
  const { base, post } = slackApi(config, timeoutMs);
  let rows: SlackInstallationRecord[];
  try {
    rows = await withExistingDatabase(config, async (db) => {
      const store = new SlackInstallationStore(db);
      const found = await Promise.all((await store.list()).map((s) => store.find(s)));
      return found.filter((r): r is SlackInstallationRecord => r !== undefined);
    });
  } catch (e) {
    return [fail("slack.installations", "Slack installations", `could not be read: ${(e as Error).message}`, "Fix the Database check above first.")];
  }
  for (const r of rows) for (const t of [r.botToken, r.botRefreshToken, r.userToken, r.userRefreshToken]) registerSecret(t ?? undefined);
  if (rows.length === 0) {
    const link = installLink(config);
    return [
      warn(
        "slack.installations",
        "Slack installations",
        `no installations yet: open ${link} to install the app to a workspace.`,
        `Open ${link} in a browser signed in to the workspace.`,
      ),
    ];
  }
  try {
    return await Promise.all(rows.map((i) => installationCheck(config, post, i, now)));
  } catch (e) {
    if (!(e instanceof Unreachable)) throw e;
    return [
      fail(
        "slack.installations",
        "Slack installations",
        `The Slack Web API at ${hostOf(base)} could not be reached: ${e.message}.`,
        "Check the network (outbound HTTPS to slack.com) or SLACK_API_URL.",
      ),
    ];
  }
}
