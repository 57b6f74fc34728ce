/**
 * What a leave takes the bot out of on Discord. A bot cannot leave one
 * channel, only the server (guild) it is in (sink.ts leave), so leaving a
 * group for GROUP_UNADMITTED=leave also leaves the server's other channels
 * and threads, admitted ones included. The gateway asks for them first
 * (Adapter.leaveTakesAlso) and leaves only if none of them is admitted.
 *
 * Read from discord.js's gateway cache: GUILD_CREATE carries every channel
 * and active thread of each server the bot is in, and the channel caches are
 * not limited (adapter.ts limits messages, members, users and the like, not
 * channels). Anything not known from it is undefined, never a guess: the
 * gateway then stays silent rather than leave.
 */
import type { Client } from "discord.js";
import { isSnowflake } from "./ids.js";

/**
 * The other chat ids in `chatId`'s server: its channels and the threads
 * known to the cache (a thread's messages normally carry its parent's chat
 * id, which is among the channels; a thread whose parent could not be looked
 * up carries its own). [] for a channel outside any server (a DM: the leave
 * takes nothing else). Undefined when the channel is not cached, or its
 * server is not (or no longer) available: a GUILD_CREATE not received yet,
 * or an outage, would leave its channel list empty or stale.
 */
export function guildChatsBeside(client: Client | undefined, chatId: string): string[] | undefined {
  if (!client || !isSnowflake(chatId)) return undefined;
  const ch = client.channels.cache.get(chatId);
  if (!ch) return undefined;
  if (ch.isDMBased()) return [];
  const guild = ch.guild;
  if (!guild?.available || !client.guilds.cache.has(guild.id)) return undefined;
  // Threads are in the guild's channel cache too (discord.js caches every guild channel there).
  return [...guild.channels.cache.keys()].filter((id) => id !== chatId);
}
