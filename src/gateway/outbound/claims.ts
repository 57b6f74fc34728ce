import type { Logger } from "../../log.js";
import { errInfo } from "../../log.js";
import type { DeliveryStore } from "../../store/deliveries.js";
import type { GatewayMetrics } from "../metrics.js";

/**
 * The replies this process has taken on (queued behind their chat, or being
 * sent). Shared mode: another process takes over replies whose claim is
 * older than staleAfterMs; a reply queued here behind a slow chat is not
 * abandoned, so this process renews the claims of every reply it holds.
 */
export class ReplyClaims {
  readonly #held = new Set<string>();
  #timer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: { deliveries: DeliveryStore; metrics: GatewayMetrics; log: Logger; owner?: string; staleAfterMs?: number }) {}

  async holding<T>(id: string, fn: () => Promise<T>): Promise<T> {
    this.#held.add(id);
    try {
      return await fn();
    } finally {
      this.#held.delete(id);
    }
  }

  has(id: string): boolean {
    return this.#held.has(id);
  }

  get size(): number {
    return this.#held.size;
  }

  start(): void {
    const stale = this.opts.staleAfterMs;
    if (!stale || this.#timer) return;
    this.#timer = setInterval(
      () => {
        if (!this.#held.size) return;
        this.opts.deliveries.renewClaims([...this.#held], this.opts.owner ?? "").catch((err) => {
          this.opts.metrics.internalErrors.inc({ where: "reply-claims-renew" });
          this.opts.log.error({ err: errInfo(err) }, "renewing reply claims failed; another process may send them after the stale period");
        });
      },
      Math.max(250, Math.floor(stale / 3)),
    );
    this.#timer.unref?.();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
