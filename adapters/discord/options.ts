/** What a DiscordAdapter is built with; index.ts fills it in from configuration (discordAdapterFromConfig). */
import type { ClientOptions } from "discord.js";
import type { Logger } from "../../src/log.js";

export interface DiscordAdapterOptions {
  /** The bot token from the Developer Portal. Never logged. */
  token: string;
  /** REST base without version or trailing slash, e.g. http://127.0.0.1:PORT/api. The gateway URL then comes from /gateway/bot. */
  apiUrl?: string;
  /** Answer other bots' messages (default false). */
  allowBots?: boolean;
  /** Role ids whose mention addresses the bot. */
  mentionRoles?: string[];
  /** Run one shard of several (one process per shard). */
  shard?: { id: number; count: number };
  /** Defaults to ctx.log at start. */
  log?: Logger;
  /** Extra discord.js client options (tests: ws.buildIdentifyThrottler). */
  clientOptions?: Partial<ClientOptions>;
  /**
   * Attempts of one ctx.inbound call before the event is dropped. Discord
   * never redelivers a gateway event, so by default there is no attempt
   * limit: the record is retried (backing off from 200 ms to 5 s) until the
   * message is older than inboundGiveUpMs (default 10 minutes, the default
   * INBOUND_TTL, past which it would not be answered anyway).
   */
  inboundAttempts?: number;
  inboundGiveUpMs?: number;
  inboundBackoffMs?: number;
  /** How long stop() waits for client.destroy() and in-flight events. Default 3000 ms. */
  stopTimeoutMs?: number;
}
