/**
 * Slack read-back: which of a reply's chunks a channel already shows.
 *
 * Every chunk the gateway posts carries its delivery key (delivery id +
 * chunk index) in the message's metadata. Before resending a reply that a
 * crash left `sending`, the gateway asks here: the channel's history (or the
 * thread's replies) since the reply was written, with
 * `include_all_metadata`, is searched for those keys. A chunk found is not
 * posted again, so a crash never shows a Slack reply twice.
 *
 * Scopes: conversations.history / conversations.replies need the
 * `*:history` scope of the conversation's type (im:history, mpim:history,
 * channels:history, groups:history), which the app manifest lists.
 */
import type { SentMessage } from "../types.js";
import type { SlackTarget } from "./ids.js";

/** metadata.event_type of the gateway's replies. */
export const REPLY_EVENT_TYPE = "switchboard_reply";

/** A message's metadata naming its delivery key, as chat.postMessage takes it. */
export function replyMetadata(key: string): { event_type: string; event_payload: { key: string } } {
  return { event_type: REPLY_EVENT_TYPE, event_payload: { key } };
}

interface HistoryPage {
  messages?: Array<{ ts?: string; metadata?: { event_type?: string; event_payload?: Record<string, unknown> } }>;
  has_more?: boolean;
  response_metadata?: { next_cursor?: string };
}

export interface SlackHistoryClient {
  conversations: {
    history(args: { channel: string; oldest: string; inclusive: boolean; include_all_metadata: boolean; limit: number; cursor?: string }): Promise<HistoryPage>;
    replies(args: {
      channel: string;
      ts: string;
      oldest: string;
      inclusive: boolean;
      include_all_metadata: boolean;
      limit: number;
      cursor?: string;
    }): Promise<HistoryPage>;
  };
}

/** Our clock and Slack's may disagree a little: look this much further back than the reply's creation. */
const CLOCK_SKEW_MS = 60_000;
const PAGE = 200;
/** At most this many pages (200 messages each) are read for one reply: a channel busier than that since the reply was written is not searched to the end. */
const MAX_PAGES = 25;

/** Slack's `oldest`: seconds with six decimals. */
export function slackTsOf(d: Date): string {
  const ms = Math.max(0, d.getTime() - CLOCK_SKEW_MS);
  return `${Math.floor(ms / 1000)}.${String((ms % 1000) * 1000).padStart(6, "0")}`;
}

/**
 * Reads the target's messages posted since `since` and returns the keys
 * found, with each message's ts. Stops once every key is found, at the end
 * of the history, or after MAX_PAGES pages (`complete` says which).
 */
export async function findPosted(
  client: SlackHistoryClient,
  target: SlackTarget,
  keys: readonly string[],
  since: Date,
): Promise<{ found: Map<string, SentMessage>; complete: boolean }> {
  const wanted = new Set(keys);
  const found = new Map<string, SentMessage>();
  const base = { channel: target.channel, oldest: slackTsOf(since), inclusive: true, include_all_metadata: true, limit: PAGE };
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const args = cursor ? { ...base, cursor } : base;
    const res =
      target.thread_ts !== undefined ? await client.conversations.replies({ ...args, ts: target.thread_ts }) : await client.conversations.history(args);
    for (const m of res.messages ?? []) {
      const key = m.metadata?.event_type === REPLY_EVENT_TYPE ? m.metadata.event_payload?.key : undefined;
      if (typeof key === "string" && wanted.has(key) && typeof m.ts === "string" && !found.has(key)) found.set(key, { messageId: m.ts });
    }
    if (found.size === wanted.size) return { found, complete: true };
    cursor = res.response_metadata?.next_cursor || undefined;
    if (!res.has_more || !cursor) return { found, complete: true };
  }
  return { found, complete: false };
}
