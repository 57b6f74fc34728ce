/** The cache stays bounded; a miss re-reads the binding from the registry. */
const LIMIT = 50_000;

/**
 * Which session each conversation (by its binding key) is on now, as far as
 * this process knows: the one in-memory record of "the current session",
 * next to the live sessions themselves. A rotation or switch (handoff) moves
 * every conversation of the old session at once, through a reverse index, so
 * a busy chat never needs the binding read and nothing scans the whole map.
 * The store's binding stays the truth; this is only ever a shortcut to it.
 */
export class CurrentSessions {
  readonly #sessionOf = new Map<string, string>();
  readonly #keysOf = new Map<string, Set<string>>();

  get(bindingKey: string): string | undefined {
    return this.#sessionOf.get(bindingKey);
  }

  set(bindingKey: string, sessionId: string): void {
    const was = this.#sessionOf.get(bindingKey);
    if (was !== undefined) this.#unlink(bindingKey, was);
    else if (this.#sessionOf.size >= LIMIT) this.#evictOldest();
    this.#sessionOf.set(bindingKey, sessionId);
    let keys = this.#keysOf.get(sessionId);
    if (!keys) {
      keys = new Set();
      this.#keysOf.set(sessionId, keys);
    }
    keys.add(bindingKey);
  }

  /** The conversations on `previousId` are on `sessionId` now. */
  moved(previousId: string, sessionId: string): void {
    const keys = this.#keysOf.get(previousId);
    if (!keys) return;
    this.#keysOf.delete(previousId);
    for (const k of keys) this.set(k, sessionId);
  }

  get size(): number {
    return this.#sessionOf.size;
  }

  #evictOldest(): void {
    const oldest = this.#sessionOf.keys().next();
    if (oldest.done) return;
    this.#unlink(oldest.value, this.#sessionOf.get(oldest.value)!);
    this.#sessionOf.delete(oldest.value);
  }

  #unlink(bindingKey: string, sessionId: string): void {
    const keys = this.#keysOf.get(sessionId);
    keys?.delete(bindingKey);
    if (keys?.size === 0) this.#keysOf.delete(sessionId);
  }
}
