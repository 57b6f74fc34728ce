import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { KvStore } from "../../store/kv.js";

/**
 * The console's login sessions. The cookie is a signed statement, checked on
 * every request: a random session id, when it was issued, when it expires,
 * and the sign-in generation it belongs to, under an HMAC keyed by
 * OPERATOR_TOKEN (a new token signs every browser out). Revocation lives in
 * the database's kv store, so it holds across restarts and across processes
 * sharing the database: /logout marks one session id revoked;
 * `switchboard logout-all` starts a new generation, which no earlier cookie
 * carries.
 */

/** How long a console login lasts. */
export const SESSION_MAX_AGE_S = 7 * 24 * 3600;

const GENERATION_KEY = "console-login:generation";
const revokedKey = (sid: string) => `console-login:revoked:${sid}`;
/** The generation before any `logout-all`. */
const FIRST_GENERATION = "0";
/** sid . issued (s) . expires (s) . generation . mac: bounded, so a huge cookie costs nothing to refuse. */
const SHAPE = /^([A-Za-z0-9_-]{22})\.(\d{1,12})\.(\d{1,12})\.([0-9a-f]{1,32})\.([A-Za-z0-9_-]{43})$/;

export interface LoginSession {
  id: string;
  issuedAt: number;
  expiresAt: number;
  generation: string;
}

export type SessionCheck = { ok: true; session: LoginSession } | { ok: false; why: "malformed" | "forged" | "expired" | "revoked" };

/** Starts a new sign-in generation: every console session issued before it is refused from now on. */
export async function signOutEverywhere(kv: KvStore): Promise<void> {
  await kv.set(GENERATION_KEY, randomBytes(8).toString("hex"));
}

export class LoginSessions {
  readonly #key: Buffer;

  constructor(
    token: string,
    private readonly kv: KvStore,
    // Read through Date each time (not a captured Date.now), so a clock faked later still applies.
    private readonly now: () => number = () => Date.now(),
  ) {
    // A key derived from the token, never the token itself: the cookie cannot reveal it.
    this.#key = createHmac("sha256", token).update("switchboard console login v2").digest();
  }

  /** A new session's cookie value, in the current generation. */
  async issue(): Promise<string> {
    const issued = Math.floor(this.now() / 1000);
    const generation = (await this.kv.get(GENERATION_KEY)) ?? FIRST_GENERATION;
    const body = `${randomBytes(16).toString("base64url")}.${issued}.${issued + SESSION_MAX_AGE_S}.${generation}`;
    return `${body}.${this.#mac(body)}`;
  }

  /** The signature and expiry alone (no store read): enough to name the session a logout revokes. */
  parse(value: string | undefined): SessionCheck {
    const m = value === undefined ? null : SHAPE.exec(value);
    if (!m) return { ok: false, why: "malformed" };
    const [, id, issued, expires, generation, mac] = m as unknown as [string, string, string, string, string, string];
    const expected = Buffer.from(this.#mac(`${id}.${issued}.${expires}.${generation}`), "utf8");
    if (!timingSafeEqual(expected, Buffer.from(mac, "utf8"))) return { ok: false, why: "forged" };
    const session = { id, issuedAt: Number(issued) * 1000, expiresAt: Number(expires) * 1000, generation };
    if (this.now() >= session.expiresAt || session.expiresAt - session.issuedAt > SESSION_MAX_AGE_S * 1000) return { ok: false, why: "expired" };
    return { ok: true, session };
  }

  /** Signature, expiry, then the store: not logged out, and of the current generation. */
  async verify(value: string | undefined): Promise<SessionCheck> {
    const parsed = this.parse(value);
    if (!parsed.ok) return parsed;
    const [generation, revoked] = await Promise.all([this.kv.get(GENERATION_KEY), this.kv.get(revokedKey(parsed.session.id))]);
    if (parsed.session.generation !== (generation ?? FIRST_GENERATION) || revoked !== undefined) return { ok: false, why: "revoked" };
    return parsed;
  }

  /** Logs one session out, wherever its cookie is presented next. */
  async revoke(session: LoginSession): Promise<void> {
    await this.kv.set(revokedKey(session.id), new Date(session.expiresAt).toISOString());
  }

  #mac(body: string): string {
    return createHmac("sha256", this.#key).update(`v2.${body}`).digest("base64url");
  }
}
