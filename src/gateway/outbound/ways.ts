import type { Logger } from "../../log.js";
import type { RateBudgetStore } from "../../store/rate-budgets.js";
import type { Adapter } from "../adapter.js";
import { adapterKey } from "../keys.js";
import type { GatewayMetrics } from "../metrics.js";
import { OutboundScheduler } from "./scheduler.js";
import { sharedBudgetOf } from "./shared-budget.js";

/** One adapter and its scheduler, which holds the adapter's per-chat queue. */
export interface Way {
  adapter: Adapter;
  scheduler: OutboundScheduler;
}

export interface WaysOptions {
  metrics: GatewayMetrics;
  log: Logger;
  /** Shared mode: each bot's bot-wide budget is the database's, one for every process (bot-budget.ts). */
  budgets?: RateBudgetStore;
}

/** The ways out, by bot: each adapter the gateway sends through, with the scheduler of each bot it speaks as. */
export class Ways {
  readonly #ways = new Map<string, Way>();

  constructor(private readonly opts: WaysOptions) {}

  add(adapter: Adapter): void {
    this.#ways.set(adapterKey(adapter.platform, adapter.botId), { adapter, scheduler: this.#scheduler(adapter) });
  }

  /** The scheduler of one bot: the adapter's own, or (botId given) one workspace of an adapter that speaks as several. */
  #scheduler(adapter: Adapter, botId?: string): OutboundScheduler {
    const { budgets, log, metrics } = this.opts;
    return new OutboundScheduler({
      limits: { perChat: adapter.limits.perChat, global: adapter.limits.global },
      log,
      onRateLimited: () => metrics.rateLimited.inc({ platform: adapter.platform }),
      platform: adapter.platform,
      // Read at each lease: an adapter's bot id may become known only at start (rekey).
      botBudget:
        budgets &&
        sharedBudgetOf(
          { platform: adapter.platform, key: () => adapterKey(adapter.platform, botId ?? adapter.botId), limit: adapter.limits.global },
          { budgets, log, metrics },
        ),
    });
  }

  /** Re-keys an adapter whose bot id became known at start; its scheduler (and what is queued there) stays. */
  rekey(adapter: Adapter): void {
    for (const [k, v] of this.#ways)
      if (v.adapter === adapter) {
        this.#ways.delete(k);
        this.#ways.set(adapterKey(adapter.platform, adapter.botId), v);
        return;
      }
    this.add(adapter);
  }

  /**
   * The adapter and scheduler of a bot. An adapter that speaks as several
   * bots (Adapter.serves: Slack's workspaces) gets a scheduler per bot on
   * first use, so each workspace spends its own rate budget.
   */
  for(a: { platform: string; botId: string }): Way | undefined {
    const key = adapterKey(a.platform, a.botId);
    const way = this.#ways.get(key);
    if (way) return way;
    const adapter = [...this.#ways.values()].find((w) => w.adapter.platform === a.platform && w.adapter.serves?.(a.botId) === true)?.adapter;
    if (!adapter) return undefined;
    this.#ways.set(key, { adapter, scheduler: this.#scheduler(adapter, a.botId) });
    return this.#ways.get(key);
  }

  /** Every way out (a bot's scheduler each). */
  all(): IterableIterator<Way> {
    return this.#ways.values();
  }
}
