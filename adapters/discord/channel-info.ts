import type { Client } from "discord.js";
import type { Logger } from "../../src/log.js";
import type { AdapterContext } from "../types.js";
import { isSnowflake } from "./ids.js";
import type { ChannelInfo } from "./normalize.js";

/** Channel type, thread parent and name: from discord.js's cache, else one REST fetch for guild channels. */
export async function channelInfo(
  client: Client | undefined,
  id: unknown,
  inGuild: boolean,
  ctx: Pick<AdapterContext, "reportError"> | undefined,
  log: Logger | undefined,
): Promise<ChannelInfo | undefined> {
  if (!client || !isSnowflake(id)) return undefined;
  let ch = client.channels.cache.get(id);
  if (!ch && inGuild)
    ch =
      (await client.channels.fetch(id).catch((err: unknown) => {
        // Without it a thread reads as its own channel: log it, count it, and go on with what the event says.
        ctx?.reportError?.("discord-channel-fetch", err);
        log?.warn(
          { channelId: id, err: err instanceof Error ? err.name : typeof err },
          "discord: could not fetch a channel's type; normalizing from the event alone",
        );
        return null;
      })) ?? undefined;
  if (!ch) return undefined;
  const info: ChannelInfo = { type: ch.type };
  if (ch.isThread() && ch.parentId) info.parentId = ch.parentId;
  if ("name" in ch && typeof ch.name === "string") info.name = ch.name;
  return info;
}
