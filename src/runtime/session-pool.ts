import { errors } from "../session/errors.js";
import type { LiveSession } from "./live-session.js";

/**
 * The live sessions in memory, bounded: past `maxLive` (by a tenth, so the
 * sweep is rare) the least recently used idle ones are closed, and a closed
 * session reopens from the store on its next event. Where a conversation
 * went after a rotation or switch is not kept here: CurrentSessions has it.
 */
export class SessionPool {
  readonly #live = new Map<string, LiveSession>();

  constructor(
    private readonly opts: {
      /** The session has a turn running or queued: it is never evicted. */
      busy(id: string): boolean;
      /** Told of every session evicted (the runner drops its turn queue). */
      evicted(id: string): void;
      maxLive?: number;
    },
  ) {}

  /** Adds a live session under `id`. AlreadyExists if the id is taken; the existing one is untouched. */
  add(id: string, session: LiveSession): LiveSession {
    if (this.#live.has(id)) throw errors.alreadyExists(`Live session ${id}`, { sessionId: id });
    this.#live.set(id, session);
    return session;
  }

  /** Evicts past the cap; call after `add`. Returns how many sessions were closed. */
  bound(): number {
    const cap = this.opts.maxLive;
    if (!cap || this.#live.size <= Math.ceil(cap * 1.1)) return 0;
    return this.#evict(
      [...this.#live.values()].sort((a, b) => a.lastUsed - b.lastUsed),
      this.#live.size - cap,
    );
  }

  get(id: string): LiveSession | undefined {
    return this.#live.get(id);
  }

  has(id: string): boolean {
    return this.#live.has(id);
  }

  delete(id: string): void {
    this.#live.delete(id);
  }

  values(): IterableIterator<LiveSession> {
    return this.#live.values();
  }

  /** Closes and forgets every live session. */
  closeAll(): void {
    for (const s of this.#live.values()) s.close();
    this.#live.clear();
  }

  get size(): number {
    return this.#live.size;
  }

  /** Closes live sessions unused for `idleMs`, keeping memory bounded as chats pile up. */
  evictIdle(idleMs: number, now: number): number {
    return this.#evict([...this.#live.values()].filter((s) => now - s.lastUsed >= idleMs));
  }

  /** Closes up to `limit` of `candidates`, in order, skipping any with a turn running or queued, or a live subscriber. */
  #evict(candidates: LiveSession[], limit = Infinity): number {
    let n = 0;
    for (const s of candidates) {
      if (n >= limit) break;
      if (this.opts.busy(s.id) || s.subscriberCount) continue;
      s.close();
      this.#live.delete(s.id);
      this.opts.evicted(s.id);
      n++;
    }
    return n;
  }
}
