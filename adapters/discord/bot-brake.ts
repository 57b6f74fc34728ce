/**
 * The brake on bot-to-bot loops (DISCORD_ALLOW_BOTS). Two bots that each
 * answer the other's message would talk forever, a model call and a message
 * per turn. Per channel (a thread is a channel of its own), at most
 * BOT_TURNS_MAX messages of other bots in a row are handed on as messages to
 * answer; past that, another bot's message goes on marked senderIsBot (the
 * gateway ignores it and counts it as `ignored`) until a person posts in the
 * channel. Counted in gateway order (the adapter's channel queues), in this
 * process: a channel's events all come through one shard.
 */
import type { InboundEnvelope } from "../types.js";

/** Other bots' messages answered in a row in one channel, with no person speaking in between. */
export const BOT_TURNS_MAX = 3;
/** Channels remembered; the oldest is forgotten first (its streak starts again). */
const CHANNELS_MAX = 10_000;

type Obj = Record<string, unknown>;

/**
 * Who wrote a raw message, as the brake counts it: a bot user (or Discord itself) can answer us and so
 * loop; a webhook only posts what something outside sends it (a CI's notices, a feed), so its messages
 * neither count nor release the brake; anything else is a person.
 */
export function writer(d: Obj): "bot" | "webhook" | "person" {
  if (d.webhook_id !== undefined && d.webhook_id !== null) return "webhook";
  const author = d.author as Obj | undefined;
  return author?.bot === true || author?.system === true ? "bot" : "person";
}

export class BotBrake {
  private readonly streaks = new Map<string, number>();
  constructor(
    private readonly onEngaged: (channelId: string) => void = () => undefined,
    private readonly max = BOT_TURNS_MAX,
  ) {}

  /** A message of channel `channelId` (raw `d`) normalized to `env`: a person's resets the streak; a bot's past the limit is marked senderIsBot. */
  check(channelId: string, d: Obj, env: InboundEnvelope): void {
    const who = writer(d);
    if (who === "webhook") return;
    if (who === "person") {
      this.streaks.delete(channelId);
      return;
    }
    const n = (this.streaks.get(channelId) ?? 0) + 1;
    this.streaks.delete(channelId);
    this.streaks.set(channelId, n);
    if (this.streaks.size > CHANNELS_MAX) this.streaks.delete(this.streaks.keys().next().value!);
    if (n > this.max) {
      if (n === this.max + 1) this.onEngaged(channelId);
      env.senderIsBot = true;
    }
  }
}
