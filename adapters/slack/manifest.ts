/**
 * The Slack app manifest for this deployment (`switchboard slack manifest`):
 * what to paste into https://api.slack.com/apps → From an app manifest, in
 * Slack's manifest schema. A pure function of the settings: the request URLs
 * are the gateway's own routes, the scopes SLACK_SCOPES (and
 * SLACK_USER_SCOPES), the events the adapter handles.
 */
import { INTERACTIONS_PATH } from "./approval-card.js";
import { UMBRELLA_COMMAND } from "./commands.js";

/** The routes Slack calls in HTTP mode, and the install flow's redirect (served by the gateway). */
export const SLACK_PATHS = {
  events: "/slack/events",
  commands: "/slack/commands",
  interactions: INTERACTIONS_PATH,
  oauthRedirect: "/slack/oauth_redirect",
} as const;

/**
 * The bot events the app subscribes to: messages and mentions in DMs,
 * channels, private channels and group DMs (normalize.ts), and the two that
 * end an installation (uninstall).
 */
export const SLACK_BOT_EVENTS = [
  "app_mention",
  "message.channels",
  "message.groups",
  "message.im",
  "message.mpim",
  "app_uninstalled",
  "tokens_revoked",
] as const;

export interface ManifestSettings {
  /** PUBLIC_URL: required in HTTP mode (the request URLs) and to install by OAuth (the redirect URL). */
  publicUrl?: string;
  /** SLACK_APP_TOKEN is set: events, commands and button presses arrive on the socket, no request URLs. */
  socketMode: boolean;
  /** SLACK_CLIENT_ID is set: workspaces install through PUBLIC_URL/slack/install (OAuth). */
  oauth: boolean;
  /** SLACK_SCOPES. */
  botScopes: readonly string[];
  /** SLACK_USER_SCOPES (none: no user scopes section). */
  userScopes?: readonly string[];
  /** The app's name and its bot's display name. */
  name?: string;
  tokenRotation?: boolean;
}

/** A manifest that cannot be built from these settings; `variable` names the setting to fix. */
export class ManifestError extends Error {
  override readonly name = "ManifestError";
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(message);
  }
}

export interface SlackManifest {
  display_information: { name: string; description: string };
  features: {
    bot_user: { display_name: string; always_online: boolean };
    slash_commands: Array<{ command: string; url?: string; description: string; usage_hint: string; should_escape: boolean }>;
  };
  oauth_config: { redirect_urls?: string[]; scopes: { bot: string[]; user?: string[] } };
  settings: {
    event_subscriptions: { request_url?: string; bot_events: string[] };
    interactivity: { is_enabled: true; request_url?: string };
    org_deploy_enabled: boolean;
    socket_mode_enabled: boolean;
    token_rotation_enabled: boolean;
  };
}

/** The app manifest; throws ManifestError when PUBLIC_URL is needed (HTTP mode, or OAuth installs) and missing. */
export function slackManifest(s: ManifestSettings): SlackManifest {
  const base = s.publicUrl?.replace(/\/+$/, "");
  if (base === undefined && !s.socketMode)
    throw new ManifestError(
      "PUBLIC_URL",
      "PUBLIC_URL is required for the manifest in HTTP mode: Slack posts events, commands and button presses to PUBLIC_URL/slack/events, /slack/commands and /slack/interactions. Set it to the gateway's public https address (or set SLACK_APP_TOKEN for Socket Mode).",
    );
  if (base === undefined && s.oauth)
    throw new ManifestError("PUBLIC_URL", "PUBLIC_URL is required for the manifest with SLACK_CLIENT_ID: the Redirect URL is PUBLIC_URL/slack/oauth_redirect.");
  const http = (path: string) => (s.socketMode ? {} : { url: `${base}${path}` });
  const name = s.name ?? "Switchboard";
  const userScopes = s.userScopes ?? [];
  return {
    display_information: { name, description: "Durable AI agent sessions in your chats." },
    features: {
      bot_user: { display_name: name.toLowerCase(), always_online: true },
      slash_commands: [
        {
          command: UMBRELLA_COMMAND,
          ...http(SLACK_PATHS.commands),
          description: "Talk to Switchboard (any chat command)",
          usage_hint: "new | status | stop | sessions | resume <n> | approve <code> | help",
          should_escape: false,
        },
      ],
    },
    oauth_config: {
      ...(s.oauth ? { redirect_urls: [`${base}${SLACK_PATHS.oauthRedirect}`] } : {}),
      scopes: { bot: [...s.botScopes], ...(userScopes.length ? { user: [...userScopes] } : {}) },
    },
    settings: {
      event_subscriptions: { ...(s.socketMode ? {} : { request_url: `${base}${SLACK_PATHS.events}` }), bot_events: [...SLACK_BOT_EVENTS] },
      interactivity: { is_enabled: true, ...(s.socketMode ? {} : { request_url: `${base}${SLACK_PATHS.interactions}` }) },
      org_deploy_enabled: true,
      socket_mode_enabled: s.socketMode,
      token_rotation_enabled: s.tokenRotation ?? false,
    },
  };
}
