/**
 * A Channel is the durable address a binding carries, such as
 * `telegram:<botId>:dm:<chatId>` or `slack:<teamId>:<botId>:dm:<channelId>`.
 * Platform modules build them (adapters/<platform>/ids.ts); the domain only
 * needs to know whether a channel is a private one.
 */
export type Channel = string;

/** Private (direct-message) channels carry a `dm` segment. */
export function isPrivateChannel(channel: Channel): boolean {
  return channel.split(":").includes("dm");
}

/** Builds a channel from its segments, rejecting separators inside a segment. */
export function channelOf(...segments: string[]): Channel {
  for (const s of segments) {
    if (s.length === 0 || s.includes(":")) throw new Error(`channel segment ${JSON.stringify(s)} must be non-empty and contain no ":"`);
  }
  return segments.join(":");
}
