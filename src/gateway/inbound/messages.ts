/**
 * Every text the inbound pipeline itself says in a chat (access refusals,
 * pairing, limits, unanswered events), in one place so wording is reviewed
 * and changed here, never inline in the pipeline.
 */

export const messages = {
  allowlistOnly: (): string => "Sorry, this bot only talks to people on its allowlist. Ask its operator for access.",
  pairingCode: (code: string): string =>
    `Hi! This bot needs its operator's approval before it can chat with you. Your pairing code is ${code} (valid for 1 hour). The operator approves it with: switchboard pairing approve ${code}`,
  pairingTooSoon: (retryAt: Date, now = Date.now()): string =>
    `You asked for a pairing code a moment ago. Please try again in ${Math.max(1, Math.ceil((retryAt.getTime() - now) / 60_000))} minute(s).`,
  tooLong: (length: number, limit: number): string =>
    `Your message is too long (${length} characters; the limit is ${limit}). Please shorten it or send it in parts.`,
  /** An accepted event that reached INBOUND_TTL unanswered; `occurredAt` is shown as HH:MM UTC. */
  unanswered: (occurredAt: Date): string => `I couldn't answer your message from ${occurredAt.toISOString().slice(11, 16)} UTC; please send it again.`,
};
