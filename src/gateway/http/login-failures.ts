/**
 * Failed sign-ins per client address, for the login form's 429. Counted per
 * address, never for the whole process, and only after the token was found
 * wrong: a stranger's guesses (or another page in the operator's browser)
 * cannot lock the operator out. The map is bounded: past `maxAddresses` the
 * address that failed longest ago is forgotten first.
 */

export interface LoginFailuresOptions {
  /** Failures allowed per address in one window; the next ones answer 429. Default 10. */
  perWindow?: number;
  /** The window, from an address's first failure in it. Default one minute. */
  windowMs?: number;
  /** Addresses remembered at once. Default 10,000. */
  maxAddresses?: number;
  now?: () => number;
}

export class LoginFailures {
  readonly #byAddress = new Map<string, { since: number; count: number }>();
  readonly #perWindow: number;
  readonly #windowMs: number;
  readonly #max: number;
  readonly #now: () => number;

  constructor(o: LoginFailuresOptions = {}) {
    this.#perWindow = o.perWindow ?? 10;
    this.#windowMs = o.windowMs ?? 60_000;
    this.#max = o.maxAddresses ?? 10_000;
    this.#now = o.now ?? (() => Date.now());
  }

  /** Counts a failure from `address`; true when it is over the limit (answer 429). */
  fail(address: string): boolean {
    const key = address.startsWith("::ffff:") ? address.slice(7) : address;
    const now = this.#now();
    let entry = this.#byAddress.get(key);
    if (!entry || now - entry.since >= this.#windowMs) entry = { since: now, count: 0 };
    entry.count++;
    // Re-inserted, so the map's order is by last failure and the first key is the one to forget.
    this.#byAddress.delete(key);
    this.#byAddress.set(key, entry);
    while (this.#byAddress.size > this.#max) this.#byAddress.delete(this.#byAddress.keys().next().value!);
    return entry.count > this.#perWindow;
  }

  get size(): number {
    return this.#byAddress.size;
  }
}
