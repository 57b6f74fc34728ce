import { randomInt } from "node:crypto";
import type { AccessStore, PairingRecord } from "../store/access.js";

/** Letters and digits that survive being read aloud or retyped (no 0/O, 1/I/L). */
const ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789";
export const PAIRING_TTL_MS = 60 * 60 * 1000;
export const PAIRING_MAX_PENDING = 3;

export function newPairingCode(length = 8): string {
  let s = "";
  for (let i = 0; i < length; i++) s += ALPHABET[randomInt(ALPHABET.length)];
  return s;
}

export type PairingOutcome =
  | { kind: "code"; code: string; expiresAt: Date; reused: boolean }
  | { kind: "full" };

/**
 * DM pairing: an unknown sender gets a one-time code that the operator
 * approves with `switchboard pairing approve <code>`. Codes expire after an
 * hour; at most three are pending per bot channel, so a flood of strangers
 * cannot bury the operator. A sender who asks again gets the same live code.
 */
export class Pairing {
  constructor(
    readonly store: AccessStore,
    readonly opts: { ttlMs?: number; maxPending?: number; now?: () => Date } = {},
  ) {}

  #now(): Date {
    return this.opts.now?.() ?? new Date();
  }

  async request(input: { platform: string; botId: string; senderId: string; displayName?: string }): Promise<PairingOutcome> {
    const now = this.#now();
    const channel = `${input.platform}:${input.botId}`;
    const live = await this.store.livePending(channel, input.senderId, now);
    if (live) return { kind: "code", code: live.code, expiresAt: live.expiresAt, reused: true };
    const rec = await this.store.createPending(
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
    );
    if (rec === "full") return { kind: "full" };
    return { kind: "code", code: rec.code, expiresAt: rec.expiresAt, reused: false };
  }

  list(): Promise<PairingRecord[]> {
    return this.store.listPending(this.#now());
  }

  approve(code: string): Promise<PairingRecord | "expired" | "missing" | "decided"> {
    return this.store.approve(code.trim().toUpperCase(), this.#now());
  }
}
