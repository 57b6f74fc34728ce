import type { Logger } from "../../log.js";
import type { GatewayMetrics } from "../metrics.js";

/** One warn line per reason at most this often; the lines in between are counted, not printed. */
const WARN_EVERY_MS = 10_000;

/**
 * Requests the edge refused (bad input, over a limit, not allowed): counted
 * in /metrics by reason, and logged at warn, rate-limited, so a flood cannot
 * flood the log too.
 */
export class RefusalLog {
  readonly #last = new Map<string, { at: number; suppressed: number }>();

  constructor(
    private readonly log: Logger,
    private readonly metrics?: GatewayMetrics,
  ) {}

  refuse(reason: string, detail: Record<string, unknown> = {}): void {
    this.metrics?.httpRefused.inc({ reason });
    const now = Date.now();
    const seen = this.#last.get(reason);
    if (seen && now - seen.at < WARN_EVERY_MS) {
      seen.suppressed++;
      return;
    }
    this.#last.set(reason, { at: now, suppressed: 0 });
    this.log.warn({ reason, ...detail, ...(seen?.suppressed ? { suppressedSinceLast: seen.suppressed } : {}) }, "HTTP request refused");
  }
}
