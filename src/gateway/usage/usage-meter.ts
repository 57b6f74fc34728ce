import { randomUUID } from "node:crypto";
import type { MeterTicket, ModelCall, ModelMeter, ModelUsage } from "../../agent/model-meter.js";
import { AgentError } from "../../agent/types.js";
import type { AgentsConfig } from "../../config/agents.js";
import { errInfo, type Logger } from "../../log.js";
import type { BudgetStore } from "../../store/budgets.js";
import type { GatewayMetrics } from "../metrics.js";
import { budgetKey, chargesFor, refusalLine, unpricedLine, usedOn, type Charge, type MeterPlace } from "./budgets.js";
import { costMicros, priceOf } from "./pricing.js";

export interface UsageMeterOptions {
  store: BudgetStore;
  agents: Pick<AgentsConfig, "prices" | "budgets">;
  /** DEFAULT_TIMEZONE: where a day and a month begin. */
  timezone: string;
  /** How long a reservation is held before the sweep settles it (AGENT_TIMEOUT plus a margin). */
  reservationTtlMs: number;
  log: Logger;
  metrics?: GatewayMetrics;
  now?: () => Date;
  /** Waits between settlement retries (tests shorten them). */
  retryDelaysMs?: readonly number[];
}

const RETRY_DELAYS_MS = [1000, 5000, 15_000, 60_000] as const;

/**
 * The gateway's model meter (issue 29): one per process, handing each turn a
 * ModelMeter for its place. Before a call it reserves the call's maximum on
 * every budget that applies (BudgetStore.reserve, one transaction), or
 * refuses with the budget's one line; after it, it settles with the actual
 * usage and writes the usage row in one transaction. A settlement that fails
 * is retried (idempotent), and one never made is settled by the sweep at the
 * reserved amount, so a call is neither lost from a budget nor charged twice.
 * A call to a model the price table does not name is refused wherever a cost
 * budget applies (it could not be counted against it).
 */
export class UsageMeter {
  readonly #o: UsageMeterOptions;
  readonly #now: () => Date;

  constructor(opts: UsageMeterOptions) {
    this.#o = opts;
    this.#now = opts.now ?? (() => new Date());
  }

  /** The meter of calls made at `place`. */
  for(place: MeterPlace): ModelMeter {
    return { reserve: (call) => this.#reserve(place, call) };
  }

  async #reserve(place: MeterPlace, call: ModelCall): Promise<MeterTicket> {
    const { store, agents, timezone, log, metrics } = this.#o;
    const id = randomUUID();
    const now = this.#now();
    const price = priceOf(agents.prices, call.model);
    const charges = chargesFor(agents.budgets, place, call.maxTokens, price, timezone, now, call.audioSeconds);
    if (!price) this.#refuseUnpriced(place, call, charges);
    let refused: Charge | undefined;
    try {
      const r = await store.reserve(
        id,
        charges.map((c) => c.claim),
        new Date(now.getTime() + this.#o.reservationTtlMs),
      );
      if (r.refused) refused = charges.find((c) => c.claim.budget === r.refused?.budget && c.claim.scope === r.refused.scope);
    } catch (err) {
      log.error(
        { ...errInfo(err), agent: place.agent, model: call.model, session: place.sessionId },
        "could not reserve the model call's budgets; no request was made",
      );
      metrics?.internalErrors.inc({ where: "budget-reserve" });
      throw new AgentError(
        "Budget",
        "The usage budgets could not be checked (the database failed), so nothing was sent to the model. Send the message again in a moment.",
        {
          cause: err,
        },
      );
    }
    if (refused) {
      const budget = budgetKey(refused.budget);
      log.warn(
        { budget, scope: refused.claim.scope, period: refused.window.key, agent: place.agent, session: place.sessionId },
        "model call refused: budget used up",
      );
      metrics?.budgetRefusals.inc({ budget });
      throw new AgentError("Budget", refusalLine(refused.budget, place, refused.window, timezone));
    }
    let done = false;
    return {
      settle: async (usage) => {
        if (done) return;
        done = true;
        await this.#settle(id, place, call, charges, usage);
      },
      release: async () => {
        if (done) return;
        done = true;
        if (charges.length > 0) await this.#attempt(id, place, () => store.settle(id, () => 0));
      },
    };
  }

  /**
   * A call to a model with no price, where a cost budget applies, is refused before anything is reserved or sent:
   * it would be charged 0 whatever the provider bills (a `/model` away from escaping every cost budget), and no
   * other price bounds what an unknown model costs. Token budgets alone leave it free to go (its row says no price).
   */
  #refuseUnpriced(place: MeterPlace, call: ModelCall, charges: readonly Charge[]): void {
    const cost = charges.find((c) => c.budget.tokens === undefined);
    if (!cost) return;
    const budget = budgetKey(cost.budget);
    this.#o.log.warn(
      { budget, scope: cost.claim.scope, model: call.model, kind: call.kind, agent: place.agent, session: place.sessionId },
      `model call refused: the model has no price and a cost budget applies; add "${call.model}" to prices in AGENTS_CONFIG (input and output 0 if it is free)`,
    );
    throw new AgentError("Budget", unpricedLine(cost.budget, place, call.model));
  }

  async #settle(id: string, place: MeterPlace, call: ModelCall, charges: Charge[], usage: ModelUsage): Promise<void> {
    const { store, agents, metrics } = this.#o;
    const price = priceOf(agents.prices, usage.model) ?? priceOf(agents.prices, call.model);
    const cost = costMicros(price, usage);
    const tokens = usage.promptTokens + usage.completionTokens;
    const byKey = new Map(charges.map((c) => [c.claim.budget, c.budget]));
    const row = {
      id,
      at: this.#now(),
      sessionId: place.sessionId,
      agent: place.agent,
      model: usage.model,
      kind: call.kind,
      userId: place.userId,
      platform: place.platform,
      chatId: place.chatId,
      workspaceId: place.workspace ?? "",
      promptTokens: usage.promptTokens,
      completionTokens: usage.completionTokens,
      cachedTokens: usage.cachedTokens,
      estimated: usage.estimated,
      costMicros: cost,
      latencyMs: Math.max(0, Math.round(usage.latencyMs)),
      priced: price !== undefined,
    };
    if (metrics) {
      const labels = { agent: place.agent, model: metrics.modelLabel(usage.model) };
      metrics.modelTokens.inc({ ...labels, type: "prompt" }, usage.promptTokens);
      metrics.modelTokens.inc({ ...labels, type: "completion" }, usage.completionTokens);
      metrics.modelTokens.inc({ ...labels, type: "cached" }, usage.cachedTokens);
      if (cost > 0) metrics.modelCost.inc(labels, cost / 1_000_000);
    }
    await this.#attempt(id, place, () =>
      store.settle(
        id,
        (budget) => {
          const b = byKey.get(budget);
          return b ? usedOn(b, tokens, cost) : 0;
        },
        row,
      ),
    );
  }

  /** Runs a settlement; on failure logs, counts, and retries it in the background (it is idempotent). */
  async #attempt(id: string, place: MeterPlace, settle: () => Promise<unknown>, attempt = 0): Promise<void> {
    const { log, metrics } = this.#o;
    try {
      await settle();
    } catch (err) {
      const delays = this.#o.retryDelaysMs ?? RETRY_DELAYS_MS;
      const delay = delays[attempt];
      log.error(
        { ...errInfo(err), call: id, agent: place.agent, session: place.sessionId, retryInMs: delay ?? null },
        delay === undefined
          ? "could not settle a model call's usage; its reservation is settled at its reserved amount when it expires"
          : "could not settle a model call's usage; retrying",
      );
      metrics?.internalErrors.inc({ where: "usage-settle" });
      if (delay === undefined) return;
      setTimeout(() => void this.#attempt(id, place, settle, attempt + 1), delay).unref();
    }
  }

  /** Settles expired reservations at their reserved amount; returns how many. The jobs' periodic pass calls it. */
  async sweep(): Promise<number> {
    const { store, log, metrics } = this.#o;
    const settled = await store.sweepExpired(this.#now());
    for (const s of settled) {
      log.warn(
        { call: s.id, budget: s.budget, scope: s.scope, period: s.period, charged: s.spent },
        "settled an expired budget reservation at its reserved amount (its call never settled: the process died or the store failed)",
      );
      metrics?.budgetSwept.inc();
    }
    return settled.length;
  }
}
