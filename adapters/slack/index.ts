/**
 * The Slack adapter. The gateway builds it from configuration with
 * slackAdapterFromConfig and drives it through the Adapter contract.
 */
import { SlackAdapter } from "./adapter.js";
import type { SlackAdapterOptions } from "./options.js";
import { SLACK_DEFAULT_SCOPES } from "../../src/config.js";
import { OAUTH_REDIRECT_PATH } from "./install-routes.js";
import type { SlackOAuthOptions } from "./installed.js";

export { SlackAdapter } from "./adapter.js";
export { EVENTS_PATH, COMMANDS_PATH } from "./http-routes.js";
export type { SlackAdapterOptions } from "./options.js";
export { SLACK_LIMITS } from "./limits.js";
export { normalizeEvent, startsThread, type SlackIdentity } from "./normalize.js";
export { normalizeCommand, commandText, UMBRELLA_COMMAND } from "./commands.js";
export * as slackIds from "./ids.js";

/** The configuration values the adapter reads (a subset of src/config.ts's Config). */
export interface SlackConfig {
  SLACK_BOT_TOKEN?: string | undefined;
  SLACK_SIGNING_SECRET?: string | undefined;
  SLACK_APP_TOKEN?: string | undefined;
  SLACK_API_URL?: string | undefined;
  SLACK_CLIENT_ID?: string | undefined;
  SLACK_CLIENT_SECRET?: string | undefined;
  SLACK_STATE_SECRET?: string | undefined;
  SLACK_SCOPES?: string[] | undefined;
  SLACK_USER_SCOPES?: string[] | undefined;
  SLACK_INSTALL_TOKEN?: string | undefined;
  PUBLIC_URL?: string | undefined;
}

/** Installs by OAuth when SLACK_CLIENT_ID is set (loadConfig has checked its companions). */
function oauthOptions(c: SlackConfig): SlackOAuthOptions | undefined {
  if (!c.SLACK_CLIENT_ID || !c.SLACK_CLIENT_SECRET || !c.SLACK_STATE_SECRET || !c.PUBLIC_URL) return undefined;
  return {
    clientId: c.SLACK_CLIENT_ID,
    clientSecret: c.SLACK_CLIENT_SECRET,
    stateSecret: c.SLACK_STATE_SECRET,
    scopes: c.SLACK_SCOPES?.length ? c.SLACK_SCOPES : [...SLACK_DEFAULT_SCOPES],
    ...(c.SLACK_USER_SCOPES?.length && { userScopes: c.SLACK_USER_SCOPES }),
    ...(c.SLACK_INSTALL_TOKEN && { installToken: c.SLACK_INSTALL_TOKEN }),
    redirectUri: new URL(OAUTH_REDIRECT_PATH, c.PUBLIC_URL).toString(),
  };
}

/**
 * Returns the adapter, or undefined when neither SLACK_BOT_TOKEN nor
 * SLACK_CLIENT_ID is set (Slack is simply not enabled). With SLACK_APP_TOKEN it runs in Socket Mode; otherwise
 * in HTTP mode, which needs SLACK_SIGNING_SECRET (the constructor says so).
 */
export function slackAdapterFromConfig(config: SlackConfig, extra: Pick<SlackAdapterOptions, "log"> = {}): SlackAdapter | undefined {
  const botToken = config.SLACK_BOT_TOKEN?.trim();
  const oauth = oauthOptions(config);
  if (!botToken && !oauth) return undefined;
  const opts: SlackAdapterOptions = { ...(botToken && { botToken }), ...(oauth && { oauth }), ...extra };
  if (config.SLACK_SIGNING_SECRET) opts.signingSecret = config.SLACK_SIGNING_SECRET;
  if (config.SLACK_APP_TOKEN) opts.appToken = config.SLACK_APP_TOKEN;
  if (config.SLACK_API_URL) opts.apiUrl = config.SLACK_API_URL;
  return new SlackAdapter(opts);
}
