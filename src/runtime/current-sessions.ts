/** The cache stays bounded; a miss re-reads the binding from the registry. */
const LIMIT = 50_000;

/**
 * Which session each conversation (by its binding key) is on now, as far as
 * this process knows: the one in-memory record of "the current session". It
 * answers both "which session is this conversation on" (the dispatcher skips
 * the binding read) and "where did the session it left go" (an event taken
 * for a rotated or switched-away session is forwarded to the one named here,
 * see Runner). A handoff writes the conversation's new session here; the
 * store's binding stays the truth, and this is only ever a shortcut to it.
 */
export class CurrentSessions {
  readonly #sessionOf = new Map<string, string>();

  constructor(private readonly limit = LIMIT) {}

  get(bindingKey: string): string | undefined {
    return this.#sessionOf.get(bindingKey);
  }

  set(bindingKey: string, sessionId: string): void {
    // Re-inserted, so the entry evicted first is the one written longest ago (a conversation just moved stays).
    if (!this.#sessionOf.delete(bindingKey) && this.#sessionOf.size >= this.limit) this.#evictOldest();
    this.#sessionOf.set(bindingKey, sessionId);
  }

  get size(): number {
    return this.#sessionOf.size;
  }

  #evictOldest(): void {
    const oldest = this.#sessionOf.keys().next();
    if (!oldest.done) this.#sessionOf.delete(oldest.value);
  }
}
