import type { Logger } from "../../src/log.js";
import type { AdapterContext } from "../types.js";

/** At most this many of a channel's waiting events are recorded as one batch (the rest form the next). */
const BATCH_MAX = 50;

/**
 * A channel's events go to the gateway one at a time, in order. The ones
 * that piled up while earlier ones were recorded arrived together: they
 * are recorded as one gateway batch (at most BATCH_MAX), so none of them
 * is handled before the rest are recorded.
 */
export class ChannelQueues {
  private readonly queues = new Map<string, { items: Array<() => Promise<void>>; drained: Promise<void> }>();

  /** The adapter's context and logger, once it has started (a batch is the context's `batch`). */
  constructor(private readonly adapter: () => { ctx?: AdapterContext; log?: Logger }) {}

  enqueue(key: string, fn: () => Promise<void>): void {
    const queued = this.queues.get(key);
    if (queued) {
      queued.items.push(fn);
      return;
    }
    const items = [fn];
    const drainSome = async () => {
      for (let n = 0; items.length && n < BATCH_MAX; n++) {
        try {
          await items.shift()!();
        } catch (err) {
          this.adapter().log?.error({ error: err instanceof Error ? err.name : typeof err }, "discord: inbound handling failed");
        }
      }
    };
    const drain = async () => {
      for (;;) {
        // Checked and removed in one step: an event enqueued later starts a new drain.
        if (!items.length) return void this.queues.delete(key);
        const { ctx } = this.adapter();
        await (ctx?.batch ? ctx.batch(drainSome) : drainSome());
      }
    };
    const entry = { items, drained: Promise.resolve() };
    this.queues.set(key, entry);
    entry.drained = drain();
  }

  /** Settles once every queued event has been handed on (or failed). */
  drained(): Promise<unknown> {
    return Promise.allSettled([...this.queues.values()].map((q) => q.drained));
  }

  clear(): void {
    this.queues.clear();
  }
}
