/** What a SlackAdapter is built with; index.ts fills it in from configuration (slackAdapterFromConfig). */
import type { Logger } from "../../src/log.js";
import type { SlackOAuthOptions } from "./installed.js";

export interface SlackAdapterOptions {
  /** One workspace's Bot User OAuth Token (xoxb-…). With `oauth`, optional: one more installation. */
  botToken?: string;
  /** HTTP mode: verifies the Events API requests. */
  signingSecret?: string;
  /** Socket Mode (xapp-…); when set, no HTTP route is mounted. */
  appToken?: string;
  /** Web API base with the trailing slash (tests point it at a fake). */
  apiUrl?: string;
  log?: Logger;
  /** Socket Mode reconnect delay (ms). */
  socketReconnectMs?: number;
  /** Installs by OAuth into many workspaces (SLACK_CLIENT_ID…): each event and send uses its installation's token (installed.ts). */
  oauth?: SlackOAuthOptions;
}
