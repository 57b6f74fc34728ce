import { randomInt } from "node:crypto";
import type { AccessStore, PairingRecord } from "../../store/access.js";

/** Letters and digits that survive being read aloud or retyped (no 0/O, 1/I/L). */
const ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789";
export const PAIRING_TTL_MS = 60 * 60 * 1000;
export const PAIRING_MAX_PENDING = 3;
/** One sender may ask for a new code at most this often. */
export const PAIRING_MIN_INTERVAL_MS = 10 * 60 * 1000;

export function newPairingCode(length = 8): string {
  let s = "";
  for (let i = 0; i < length; i++) s += ALPHABET[randomInt(ALPHABET.length)];
  return s;
}

export type PairingOutcome =
  | { kind: "code"; code: string; expiresAt: Date; reused: boolean }
  /** The sender asked for a new code too recently; they may ask again at retryAt. */
  | { kind: "throttled"; retryAt: Date };

/**
 * DM pairing: an unknown sender gets a one-time code that the operator
 * approves with `switchboard pairing approve <code>`. Codes expire after an
 * hour. At most three are pending per bot channel, so a flood of strangers
 * cannot bury the operator; a new request replaces the oldest pending one,
 * so strangers cannot lock everyone else out either. A sender who asks again
 * gets the same live code, and may ask for a new one at most once per
 * 10 minutes (so two senders cannot keep replacing each other's codes).
 */
export class Pairing {
  constructor(
    readonly store: AccessStore,
    readonly opts: { ttlMs?: number; maxPending?: number; minIntervalMs?: number; now?: () => Date } = {},
  ) {}

  #now(): Date {
    return this.opts.now?.() ?? new Date();
  }

  async request(input: { platform: string; botId: string; senderId: string; displayName?: string }): Promise<PairingOutcome> {
    const now = this.#now();
    const channel = `${input.platform}:${input.botId}`;
    const r = await this.store.createPending(
      {
        code: newPairingCode(),
        platform: input.platform,
        botId: input.botId,
        channel,
        senderId: input.senderId,
        displayName: input.displayName ?? null,
        expiresAt: new Date(now.getTime() + (this.opts.ttlMs ?? PAIRING_TTL_MS)),
      },
      this.opts.maxPending ?? PAIRING_MAX_PENDING,
      now,
      this.opts.minIntervalMs ?? PAIRING_MIN_INTERVAL_MS,
    );
    if ("throttledUntil" in r) return { kind: "throttled", retryAt: r.throttledUntil };
    return { kind: "code", code: r.record.code, expiresAt: r.record.expiresAt, reused: r.reused };
  }

  list(): Promise<PairingRecord[]> {
    return this.store.listPending(this.#now());
  }

  /** `scope`: only a code asked of this platform's bot (else "missing", as an unknown code). */
  approve(code: string, scope?: { platform: string; botId: string }): Promise<PairingRecord | "expired" | "missing" | "decided" | "replaced"> {
    return this.store.approve(code.trim().toUpperCase(), this.#now(), scope);
  }
}
