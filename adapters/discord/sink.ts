/**
 * The outbound half: send, edit, typing, react and leave over discord.js's REST
 * client. Every call goes through the gateway's scheduler, which paces and
 * orders per chat; discord.js's REST queue underneath it waits out 429s (see
 * errors.ts). Calls are raw REST routes rather than channel objects, so a
 * reply never depends on discord.js having cached the channel.
 *
 * A slash command's reply (the address carries extra.interactionToken) goes
 * to the interaction: the first send fills the deferred "thinking..."
 * response (PATCH @original), later sends are follow-ups. When the token has
 * expired (15 min) or was never deferred, the reply falls back to a plain
 * channel message, so a slow turn is still answered.
 */
import type { REST } from "discord.js";
import { AdapterError, type AdapterSink, type ReplyAddress, type SendOptions, type SentMessage } from "../types.js";
import { toAdapterError } from "./errors.js";
import { decodeReplyAddress, isSnowflake, nonceOf, type DiscordTarget } from "./ids.js";

/** Nobody is pinged by a reply: not @everyone, roles, users, nor the replied-to author. */
export const ALLOWED_MENTIONS = { parse: [] as string[], replied_user: false };

/** Interaction tokens live 15 minutes; state about them is kept no longer. */
const INTERACTION_TTL_MS = 15 * 60_000;

export interface DiscordSinkDeps {
  /** The started client's REST; throws Unavailable before start(). */
  rest(): REST;
  /** The deferral of an interaction still in flight, if any: the original response exists only after it. */
  deferral(token: string): Promise<unknown> | undefined;
  now?: () => number;
}

export interface DiscordSink extends AdapterSink {
  /** Marks an interaction's original response as used (tests; a restart forgets it). */
  markAnswered(token: string): void;
}

/** One REST call through the started client, its failure as an AdapterError naming the route. */
type RestCall = <T>(what: string, fn: (rest: REST) => Promise<unknown>) => Promise<T>;

/**
 * Interaction tokens whose @original was filled: token -> when. In memory: after a restart the next
 * send for an old interaction edits @original again, which only repeats the first reply's slot;
 * acceptable next to a lost reply.
 */
type Answered = Map<string, number>;

interface Interactions {
  call: RestCall;
  deps: DiscordSinkDeps;
  answered: Answered;
  now: () => number;
}

function pruneAnswered(answered: Answered, now: number): void {
  const cutoff = now - INTERACTION_TTL_MS;
  for (const [k, at] of answered) if (at < cutoff) answered.delete(k);
}

async function postToChannel(call: RestCall, t: DiscordTarget, content: string, opts?: SendOptions): Promise<SentMessage> {
  const body: Record<string, unknown> = { content, allowed_mentions: ALLOWED_MENTIONS };
  if (opts?.idempotencyKey) {
    body.nonce = nonceOf(opts.idempotencyKey);
    body.enforce_nonce = true;
  }
  if (t.replyToMessageId) body.message_reference = { message_id: t.replyToMessageId, fail_if_not_exists: false };
  const m = await call<{ id: string }>("POST /channels/:id/messages", (rest) => rest.post(`/channels/${t.channelId}/messages`, { body }));
  return { messageId: String(m.id) };
}

async function sendToInteraction(i: Interactions, t: DiscordTarget, content: string, opts?: SendOptions): Promise<SentMessage> {
  const { call, answered } = i;
  const { applicationId, token } = t.interaction!;
  await i.deps.deferral(token)?.catch(() => undefined);
  pruneAnswered(answered, i.now());
  const body = { content, allowed_mentions: ALLOWED_MENTIONS };
  try {
    if (!answered.has(token)) {
      const m = await call<{ id: string }>("PATCH /webhooks/:app/:token/messages/@original", (rest) =>
        rest.patch(`/webhooks/${applicationId}/${token}/messages/@original`, { body, auth: false }),
      );
      answered.set(token, i.now());
      return { messageId: String(m.id) };
    }
    const m = await call<{ id: string }>("POST /webhooks/:app/:token", (rest) =>
      rest.post(`/webhooks/${applicationId}/${token}`, { body, auth: false, query: new URLSearchParams({ wait: "true" }) }),
    );
    return { messageId: String(m.id) };
  } catch (err) {
    if (!(err instanceof AdapterError) || err.code !== "Rejected") throw err;
    // Expired or unknown interaction: say it in the channel instead of losing it.
    return postToChannel(call, { channelId: t.channelId }, content, opts);
  }
}

async function editMessage(call: RestCall, t: DiscordTarget, messageId: string, text: string): Promise<void> {
  const body = { content: text, allowed_mentions: ALLOWED_MENTIONS };
  if (t.interaction) {
    const { applicationId, token } = t.interaction;
    try {
      await call("PATCH /webhooks/:app/:token/messages/:id", (rest) =>
        rest.patch(`/webhooks/${applicationId}/${token}/messages/${messageId}`, { body, auth: false }),
      );
      return;
    } catch (err) {
      if (!(err instanceof AdapterError) || err.code !== "Rejected") throw err;
      // A fallback channel message (or an expired token): edit it as a channel message.
    }
  }
  await call("PATCH /channels/:id/messages/:id", (rest) => rest.patch(`/channels/${t.channelId}/messages/${messageId}`, { body }));
}

export function createDiscordSink(deps: DiscordSinkDeps): DiscordSink {
  const now = deps.now ?? Date.now;
  const answered: Answered = new Map();
  const call: RestCall = async <T>(what: string, fn: (rest: REST) => Promise<unknown>): Promise<T> => {
    try {
      return (await fn(deps.rest())) as T;
    } catch (err) {
      throw toAdapterError(err, what);
    }
  };
  const interactions: Interactions = { call, deps, answered, now };

  return {
    async send(to: ReplyAddress, text: string, opts?: SendOptions): Promise<SentMessage> {
      const t = target(to);
      // Already rendered, mentions defused (format.ts), and measured against the limit as it is.
      const content = text;
      return t.interaction ? sendToInteraction(interactions, t, content, opts) : postToChannel(call, t, content, opts);
    },

    async edit(to: ReplyAddress, messageId: string, text: string): Promise<void> {
      const t = target(to);
      if (!isSnowflake(messageId))
        throw new AdapterError("discord", "Rejected", `"${messageId}" is not a Discord message id: pass the messageId send() returned`);
      await editMessage(call, t, messageId, text);
    },

    async typing(to: ReplyAddress): Promise<void> {
      const t = target(to);
      // The deferred response already shows "thinking..." until it is filled.
      if (t.interaction && !answered.has(t.interaction.token)) return;
      await call("POST /channels/:id/typing", (rest) => rest.post(`/channels/${t.channelId}/typing`));
    },

    async react(to: ReplyAddress, messageId: string, emoji: string): Promise<void> {
      const t = target(to);
      if (!isSnowflake(messageId)) throw new AdapterError("discord", "Rejected", `"${messageId}" is not a Discord message id`);
      await call("PUT /channels/:id/messages/:id/reactions/:emoji/@me", (rest) =>
        rest.put(`/channels/${t.channelId}/messages/${messageId}/reactions/${encodeURIComponent(emoji)}/@me`),
      );
    },

    async unanswered(to: ReplyAddress): Promise<void> {
      const t = target(to);
      if (!t.interaction || answered.has(t.interaction.token)) return;
      const { applicationId, token } = t.interaction;
      await deps.deferral(token)?.catch(() => undefined);
      try {
        await call("DELETE /webhooks/:app/:token/messages/@original", (rest) =>
          rest.delete(`/webhooks/${applicationId}/${token}/messages/@original`, { auth: false }),
        );
      } catch (err) {
        // Expired or unknown: Discord already shows "did not respond", and there is nothing left to clear.
        if (!(err instanceof AdapterError) || err.code !== "Rejected") throw err;
      }
    },

    async leave(chatId: string): Promise<void> {
      if (!isSnowflake(chatId)) throw new AdapterError("discord", "Rejected", `"${chatId}" is not a Discord channel id`);
      // A bot cannot leave one channel, only the server (guild) it is in: look the channel's guild up, then leave it.
      const ch = await call<{ guild_id?: string }>("GET /channels/:id", (rest) => rest.get(`/channels/${chatId}`));
      if (!ch.guild_id) throw new AdapterError("discord", "Rejected", `channel ${chatId} is not in a server: there is nothing to leave`);
      await call("DELETE /users/@me/guilds/:id", (rest) => rest.delete(`/users/@me/guilds/${ch.guild_id}`));
    },

    markAnswered(token: string): void {
      answered.set(token, now());
    },
  };
}

function target(to: ReplyAddress): DiscordTarget {
  const t = decodeReplyAddress(to);
  if ("error" in t) throw new AdapterError("discord", "Rejected", t.error);
  return t;
}
