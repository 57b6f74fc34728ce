import type { Client } from "discord.js";
import type { Logger } from "../../src/log.js";
import type { AdapterContext } from "../types.js";
import { isSnowflake } from "./ids.js";
import type { ChannelInfo } from "./normalize.js";

/** Lookups of one channel that fail for a moment (5xx, network) before the event is normalized from itself alone. */
const FETCH_ATTEMPTS = 3;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms).unref());

/** A refusal (4xx: no access, unknown channel) will not pass by asking again; a 5xx or a network failure may. */
function transient(err: unknown): boolean {
  const status = (err as { status?: unknown }).status;
  return typeof status === "number" ? status >= 500 || status === 408 : true;
}

/**
 * One REST fetch of a channel the cache lacks, tried again while it fails transiently: a thread misread as a
 * channel of its own is judged by its own admission, not its parent's, and in an admitted channel that is a
 * silent refusal. The channel's later events wait meanwhile (the adapter's per-channel queue).
 */
async function fetchChannel(client: Client, id: string) {
  for (let attempt = 1; ; attempt++) {
    try {
      // force: by now discord.js may have cached a partial of it from the event itself (partials: Channel), thread parent unknown.
      return await client.channels.fetch(id, { force: true });
    } catch (err) {
      if (attempt >= FETCH_ATTEMPTS || !transient(err)) throw err;
      await sleep(100 * 4 ** (attempt - 1));
    }
  }
}

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
  // A partial is what discord.js made up from an event alone (partials: Channel): a thread's parent is not in it.
  if ((!ch || ch.partial) && inGuild)
    ch =
      (await fetchChannel(client, id).catch((err: unknown) => {
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
