/**
 * The Slack adapter. The gateway builds it from configuration with
 * slackAdapterFromConfig and drives it through the Adapter contract.
 */
import { SlackAdapter, type SlackAdapterOptions } from "./adapter.js";

export { SlackAdapter, EVENTS_PATH, COMMANDS_PATH, type SlackAdapterOptions } from "./adapter.js";
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
}

/**
 * Returns the adapter, or undefined when no SLACK_BOT_TOKEN is set (Slack is
 * simply not enabled). With SLACK_APP_TOKEN it runs in Socket Mode; otherwise
 * in HTTP mode, which needs SLACK_SIGNING_SECRET (the constructor says so).
 */
export function slackAdapterFromConfig(config: SlackConfig, extra: Pick<SlackAdapterOptions, "log"> = {}): SlackAdapter | undefined {
  const botToken = config.SLACK_BOT_TOKEN?.trim();
  if (!botToken) return undefined;
  const opts: SlackAdapterOptions = { botToken, ...extra };
  if (config.SLACK_SIGNING_SECRET) opts.signingSecret = config.SLACK_SIGNING_SECRET;
  if (config.SLACK_APP_TOKEN) opts.appToken = config.SLACK_APP_TOKEN;
  if (config.SLACK_API_URL) opts.apiUrl = config.SLACK_API_URL;
  return new SlackAdapter(opts);
}
