/**
 * The Discord adapter. The gateway builds it from configuration with
 * discordAdapterFromConfig and drives it through the Adapter contract.
 */
import { DiscordAdapter } from "./adapter.js";
import type { DiscordAdapterOptions } from "./options.js";
import { AdapterSetupError } from "../types.js";

export { DiscordAdapter } from "./adapter.js";
export type { DiscordAdapterOptions } from "./options.js";
export { DISCORD_LIMITS } from "./limits.js";
export { normalizeMessage, type ChannelInfo, type DiscordBotIdentity } from "./normalize.js";
export { normalizeInteraction, discordCommandList } from "./commands.js";
export * as discordIds from "./ids.js";

/** The configuration values the adapter reads (a subset of src/config.ts's Config). */
export interface DiscordConfig {
  DISCORD_BOT_TOKEN?: string | undefined;
  DISCORD_API_URL?: string | undefined;
  DISCORD_ALLOW_BOTS?: boolean | undefined;
  DISCORD_MENTION_ROLES?: readonly string[] | undefined;
  DISCORD_SHARD_ID?: string | undefined;
  DISCORD_SHARD_COUNT?: string | undefined;
}

/**
 * Returns the adapter, or undefined when no DISCORD_BOT_TOKEN is set (the
 * platform is simply not enabled). Throws with the fix when the shard values
 * do not fit together.
 */
export function discordAdapterFromConfig(config: DiscordConfig, extra: Pick<DiscordAdapterOptions, "log"> = {}): DiscordAdapter | undefined {
  const token = config.DISCORD_BOT_TOKEN?.trim();
  if (!token) return undefined;
  const opts: DiscordAdapterOptions = { token, ...extra };
  if (config.DISCORD_API_URL) opts.apiUrl = config.DISCORD_API_URL;
  if (config.DISCORD_ALLOW_BOTS) opts.allowBots = true;
  if (config.DISCORD_MENTION_ROLES?.length) opts.mentionRoles = [...config.DISCORD_MENTION_ROLES];
  const id = config.DISCORD_SHARD_ID?.trim();
  const count = config.DISCORD_SHARD_COUNT?.trim();
  if (id || count) {
    if (!id || !count || !/^\d+$/.test(id) || !/^\d+$/.test(count))
      throw new AdapterSetupError("Config", "set both DISCORD_SHARD_ID and DISCORD_SHARD_COUNT as whole numbers (e.g. 0 and 2), or neither");
    opts.shard = { id: Number(id), count: Number(count) };
  }
  return new DiscordAdapter(opts);
}
