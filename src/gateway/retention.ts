import { errInfo, type Logger } from "../log.js";
import type { GatewayMetrics } from "./metrics.js";

export interface Prunable {
  prune(before: Date, limit: number): Promise<number>;
}

export interface RetentionOptions {
  /** RECORD_RETENTION: rows older than this go. */
  retentionMs: number;
  tables: Record<"inbound" | "delivery", Prunable>;
  log: Logger;
  metrics?: GatewayMetrics;
  /** Rows per DELETE: small, so no statement holds the database for long. */
  batch?: number;
  /** Batches per sweep, so one sweep is bounded too; the next sweep goes on. */
  maxBatches?: number;
}

/**
 * Inbound and delivery records are the dedupe and resend memory: they only
 * need to outlive every platform's retry window (minutes to hours). Older
 * ones are deleted in the background, a small batch at a time with a pause
 * between, so the table cannot grow without end and no lock is held long.
 */
export class Retention {
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<unknown> | undefined;
  lastSweep: { at: Date; pruned: number } | undefined;

  constructor(private readonly o: RetentionOptions) {}

  start(everyMs = 10 * 60_000): void {
    const tick = () => {
      this.#running ??= this.sweep()
        .catch((err) => this.o.log.warn({ err: errInfo(err) }, "pruning old records failed; the next sweep tries again"))
        .finally(() => (this.#running = undefined));
    };
    // The first sweep soon after start, off the start path.
    setTimeout(tick, 30_000).unref();
    this.#timer = setInterval(tick, everyMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#running;
  }

  /** One sweep over both tables; returns how many rows went. */
  async sweep(now = Date.now()): Promise<number> {
    const before = new Date(now - this.o.retentionMs);
    const batch = this.o.batch ?? 500;
    const maxBatches = this.o.maxBatches ?? 200;
    let total = 0;
    for (const [table, store] of Object.entries(this.o.tables)) {
      for (let i = 0; i < maxBatches; i++) {
        const n = await store.prune(before, batch);
        total += n;
        if (n > 0) this.o.metrics?.recordsPruned.inc({ table }, n);
        if (n < batch) break;
        // Let other writers in between batches.
        await new Promise((r) => setTimeout(r, 20));
      }
    }
    this.lastSweep = { at: new Date(now), pruned: total };
    if (total > 0) this.o.log.info({ pruned: total, before: before.toISOString() }, "pruned old inbound and delivery records");
    return total;
  }
}
