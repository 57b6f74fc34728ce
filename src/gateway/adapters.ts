import type { Adapter } from "./adapter.js";
import { adapterKey } from "./keys.js";

/**
 * The platform adapters this process runs, each found by its platform and
 * bot id. Built first in the composition root (src/gateway/app.ts) and handed
 * to every part that reaches an adapter (the inbound gateway, the approval
 * cards, attachments, scheduled jobs, /healthz), so none of them holds a list
 * of its own or waits for another part to exist.
 */
export class AdapterRegistry {
  readonly #all: Adapter[] = [];
  readonly #byKey = new Map<string, Adapter>();

  /** Registers an adapter. Of two under one platform and bot id, the first is the one found. */
  add(adapter: Adapter): void {
    this.#all.push(adapter);
    this.#file(adapter);
  }

  /** The adapter of this platform and bot, if this process runs it (an adapter of several bots answers for each: Adapter.serves). */
  get(platform: string, botId: string): Adapter | undefined {
    return this.#byKey.get(adapterKey(platform, botId)) ?? this.#all.find((a) => a.platform === platform && a.serves?.(botId) === true);
  }

  /** Every adapter, in the order they were added. */
  list(): readonly Adapter[] {
    return this.#all;
  }

  /** Files an adapter again under its bot id, which some platforms report only at login (after start()). */
  rekey(adapter: Adapter): void {
    for (const [k, a] of this.#byKey) if (a === adapter) this.#byKey.delete(k);
    this.#file(adapter);
  }

  #file(adapter: Adapter): void {
    const key = adapterKey(adapter.platform, adapter.botId);
    if (!this.#byKey.has(key)) this.#byKey.set(key, adapter);
  }
}
