import { setBounded } from "../../bounded.js";

/** The per-chat binding cache stays bounded; a miss re-reads the binding. */
const CHAT_CACHE_LIMIT = 50_000;

/**
 * Which session each conversation was last bound to, so a message in a busy
 * chat skips the binding read. Rotations and switches move a conversation:
 * `moved` repoints every entry of the old session.
 */
export class BindingCache {
  readonly #bindings = new Map<string, string>();

  get(chatKey: string): string | undefined {
    return this.#bindings.get(chatKey);
  }

  set(chatKey: string, sessionId: string): void {
    setBounded(this.#bindings, chatKey, sessionId, CHAT_CACHE_LIMIT);
  }

  moved(previousId: string, sessionId: string): void {
    for (const [k, v] of this.#bindings) if (v === previousId) this.#bindings.set(k, sessionId);
  }

  get size(): number {
    return this.#bindings.size;
  }
}
