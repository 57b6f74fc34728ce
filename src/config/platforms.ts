import { z } from "zod";
import { bool, list, url, matching, wholeNumber } from "./values.js";

/**
 * The bot scopes the adapter uses (events, replies, reactions, files, slash
 * commands): SLACK_SCOPES' default, what `switchboard slack manifest` grants,
 * and what `doctor` checks each installation for.
 */
export const SLACK_DEFAULT_SCOPES = [
  "app_mentions:read",
  "chat:write",
  "reactions:write",
  "commands",
  "files:read",
  "im:history",
  "channels:history",
  "groups:history",
  "mpim:history",
] as const;

const scopeList = (fallback: readonly string[]) =>
  list()
    .superRefine((scopes, ctx) => {
      const bad = scopes.find((s) => !/^[a-z][a-z0-9_.-]*(:[a-z0-9_.-]+)*$/.test(s));
      if (bad !== undefined)
        ctx.addIssue({ code: "custom", message: `must be a comma-separated list of Slack scopes such as chat:write (got "${bad.slice(0, 40)}")` });
    })
    .transform((scopes) => (scopes.length ? scopes : [...fallback]));

/** The platforms: Telegram, Discord and Slack credentials and endpoints. */
export const platformSettings = {
  TELEGRAM_BOT_TOKEN: matching(
    /^\d+:[A-Za-z0-9_-]+$/,
    "must be the token @BotFather gave you: the bot id, a colon, then letters, digits, _ and - (e.g. 123456789:AAE...)",
  ),
  TELEGRAM_API_ROOT: url("the Telegram Bot API root", { trailingSlash: "forbid" }),
  TELEGRAM_MODE: z.enum(["polling", "webhook"]).default("polling"),
  TELEGRAM_WEBHOOK_SECRET: matching(/^[A-Za-z0-9_-]{1,256}$/, "must be 1-256 characters of A-Z, a-z, 0-9, _ and - (what Telegram allows in secret_token)"),
  TELEGRAM_WEBHOOK_URL: url("the public webhook URL Telegram will call"),

  DISCORD_BOT_TOKEN: matching(
    /^[A-Za-z0-9_.-]+$/,
    "must be the bot token from the Discord Developer Portal (Bot tab): letters, digits, '.', '_' and '-', no spaces",
  ),
  DISCORD_API_URL: url("the Discord REST API, e.g. http://127.0.0.1:PORT/api", { trailingSlash: "forbid" }),
  DISCORD_ALLOW_BOTS: bool(false),
  DISCORD_MENTION_ROLES: list().superRefine((ids, ctx) => {
    const bad = ids.find((id) => !/^\d{1,20}$/.test(id));
    if (bad !== undefined) ctx.addIssue({ code: "custom", message: `must be a comma-separated list of Discord role ids (numbers; got "${bad}")` });
  }),
  DISCORD_SHARD_ID: wholeNumber("must be a whole number from 0 to DISCORD_SHARD_COUNT-1"),
  DISCORD_SHARD_COUNT: wholeNumber("must be a whole number of shards, 1 or more"),

  SLACK_BOT_TOKEN: matching(/^xoxb-[A-Za-z0-9-]+$/, "must be the app's Bot User OAuth Token (xoxb-..., from OAuth & Permissions)"),
  SLACK_SIGNING_SECRET: matching(/^[A-Za-z0-9_-]+$/, "must be the Signing Secret from the Slack app's Basic Information page (letters and digits, no spaces)"),
  SLACK_APP_TOKEN: matching(/^xapp-[A-Za-z0-9-]+$/, "must be an app-level token with connections:write (xapp-..., from Basic Information > App-Level Tokens)"),
  SLACK_API_URL: url("the Slack Web API base, e.g. http://127.0.0.1:PORT/api/", { trailingSlash: "require" }),

  // Installs by OAuth (many workspaces): the names Bolt gives them.
  SLACK_CLIENT_ID: matching(/^[0-9]+\.[0-9]+$/, "must be the app's Client ID from Basic Information > App Credentials (digits, a dot, digits)"),
  SLACK_CLIENT_SECRET: matching(/^[A-Za-z0-9]+$/, "must be the app's Client Secret from Basic Information > App Credentials (letters and digits)"),
  SLACK_STATE_SECRET: matching(/^\S{32,256}$/, "must be 32 to 256 characters with no spaces: make one with `openssl rand -hex 32`"),
  SLACK_SCOPES: scopeList(SLACK_DEFAULT_SCOPES),
  SLACK_USER_SCOPES: scopeList([]),
  SLACK_INSTALL_TOKEN: matching(/^[A-Za-z0-9_-]{16,256}$/, "must be 16 to 256 characters of A-Z, a-z, 0-9, _ and - (make one with `openssl rand -hex 24`)"),
  SLACK_PURGE_ON_UNINSTALL: bool(false),
};
