/**
 * The discord.js Client the adapter runs on: built with the caches it does not need turned off and
 * REST going through Node's fetch, and torn down without hanging the stop.
 */
import { Client, Events, GatewayIntentBits, Options, Partials, type ClientOptions } from "discord.js";
import type { Logger } from "../../src/log.js";
import type { DiscordAdapterOptions } from "./options.js";

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms).unref());
/** REST's requests through Node's fetch (read at call time, so a test may replace globalThis.fetch). */
const restFetch: NonNullable<NonNullable<ClientOptions["rest"]>["makeRequest"]> = (url, init) => fetch(url, init as RequestInit);

/** How often discord.js's REST client drops the per-channel handlers that are idle and not rate-limited. */
export const REST_HANDLER_SWEEP_MS = 60_000;

/**
 * Node's own fetch, not REST's default undici 6 request (a second HTTP client, about 20 ms of
 * every start to evaluate; the build loads it only on first use, scripts/build-patches.mjs).
 * A REST handler per channel sent to (2.3 MB for 3,300 channels at the memory bench's 10,000
 * live chats) stays until a sweep finds it idle; discord.js sweeps hourly, this every minute. A
 * swept handler is one not rate-limited (its bucket's hash is kept), so the next send to the
 * channel only builds a new one.
 */
function restOptions(opts: DiscordAdapterOptions): NonNullable<ClientOptions["rest"]> {
  return {
    makeRequest: restFetch,
    handlerSweepInterval: REST_HANDLER_SWEEP_MS,
    ...opts.clientOptions?.rest,
    retries: 0,
    ...(opts.apiUrl ? { api: opts.apiUrl } : {}),
  };
}

/** A Client for the adapter's options, not yet logged in. */
export function createDiscordClient(opts: DiscordAdapterOptions): Client {
  return new Client({
    intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.DirectMessages, GatewayIntentBits.MessageContent],
    partials: [Partials.Channel, Partials.Message],
    // Inbound events are read from the raw packets and replies go out over REST: discord.js's
    // message, member and user caches would only grow with every chat (about 100 MB per 1,000 busy channels).
    makeCache: Options.cacheWithLimits({
      ...Options.DefaultMakeCacheSettings,
      MessageManager: 0,
      ReactionManager: 0,
      PresenceManager: 0,
      ThreadMemberManager: 0,
      GuildMemberManager: { maxSize: 0, keepOverLimit: (m) => m.id === m.client.user.id },
      UserManager: { maxSize: 0, keepOverLimit: (u) => u.id === u.client.user.id },
    }),
    ...(opts.shard ? { shards: [opts.shard.id], shardCount: opts.shard.count } : {}),
    ...opts.clientOptions,
    rest: restOptions(opts),
  });
}

/** destroy() can hang while a shard is mid-reconnect; the process must still be able to exit. */
export async function destroyDiscordClient(client: Client, timeoutMs: number, log: Logger | undefined): Promise<void> {
  client.removeAllListeners();
  // An 'error' emitted with no listener would throw from inside discord.js.
  client.on(Events.Error, () => undefined);
  const done = client.destroy().then(
    () => true,
    () => true,
  );
  const finished = await Promise.race([done, sleep(timeoutMs).then(() => false)]);
  if (!finished) log?.warn({ timeoutMs }, "discord: client.destroy() did not finish in time; continuing the stop");
}
