import type { Config } from "../config.js";
import { SLACK_DEFAULT_SCOPES } from "../config/platforms.js";
import { call, fail, hostOf, pass, remoteMessage, Unreachable, type CheckResult } from "./check.js";

/** The bot scopes the README's manifest (and `switchboard slack manifest`) grants; test/doctor checks the two stay the same. */
export const SLACK_SCOPES = SLACK_DEFAULT_SCOPES;

const TOKEN_FIX = "Slack app → OAuth & Permissions → copy the Bot User OAuth Token (xoxb-…) into SLACK_BOT_TOKEN; reinstall the app if it was uninstalled.";

type SlackPost = (method: string, token: string) => ReturnType<typeof call>;

/** Slack: the bot token (auth.test), its granted scopes (the x-oauth-scopes header), and the Socket Mode token when set. */
export async function checkSlack(config: Config, timeoutMs: number): Promise<CheckResult[]> {
  const base = config.SLACK_API_URL ?? "https://slack.com/api/";
  const post: SlackPost = (method, token) =>
    call(`${base}${method}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/x-www-form-urlencoded" },
      body: "",
      timeoutMs,
    });
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
  const granted = new Set(
    header
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean),
  );
  const missing = SLACK_SCOPES.filter((s) => !granted.has(s));
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
