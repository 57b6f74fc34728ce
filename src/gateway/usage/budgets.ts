import type { Budget, Price } from "../../config/agents.js";
import type { BudgetClaim } from "../../store/budgets.js";
import { formatCost, maxCostMicros } from "./pricing.js";
import { describeReset, periodOf, type PeriodWindow } from "./periods.js";

/** Where a model call is made and for whom: what the budgets are scoped by and the usage row records. */
export interface MeterPlace {
  agent: string;
  sessionId: string;
  /** The sender's canonical user id ("" for none: reflection). */
  userId: string;
  platform: string;
  chatId: string;
  /** The Slack team or Discord guild. */
  workspace?: string;
}

/**
 * A budget's stable name, its counters' key: what it limits, per what, and
 * its filters (`user/day/tokens`, `agent/month/cost/agent=coder`). It names
 * the budget in `switchboard budgets reset <budget>` and in the metric.
 */
export function budgetKey(b: Budget): string {
  return [
    b.per,
    b.period,
    b.tokens !== undefined ? "tokens" : "cost",
    ...(b.agent ? [`agent=${b.agent}`] : []),
    ...(b.platform ? [`platform=${b.platform}`] : []),
  ].join("/");
}

/** The counter's scope of a budget at a place, or undefined where it does not apply. */
export function scopeOf(b: Budget, place: MeterPlace): string | undefined {
  if (b.agent !== undefined && b.agent !== place.agent) return undefined;
  if (b.platform !== undefined && b.platform !== place.platform) return undefined;
  switch (b.per) {
    case "user":
      return place.userId || undefined;
    case "chat":
      return place.chatId ? `${place.platform}:${place.chatId}` : undefined;
    case "agent":
      return place.agent;
    case "workspace":
      return place.workspace ? `${place.platform}:${place.workspace}` : undefined;
    case "global":
      return "*";
  }
}

/** A budget's limit in its counters' unit: tokens, or cost in micro-units. */
export const limitOf = (b: Budget): number => (b.tokens !== undefined ? b.tokens : Math.round((b.cost ?? 0) * 1_000_000));

export interface Charge {
  budget: Budget;
  window: PeriodWindow;
  claim: BudgetClaim;
}

/**
 * What a call reserves on each budget that applies at the place: its maximum tokens, or their maximum cost (with a
 * transcription's `audioSeconds` at the model's perMinute price). A cost budget with no price for the model reserves
 * 0 here: the meter refuses such a call before reserving (unpricedLine).
 */
export function chargesFor(
  budgets: readonly Budget[],
  place: MeterPlace,
  maxTokens: number,
  price: Price | undefined,
  tz: string,
  now: Date,
  audioSeconds?: number,
): Charge[] {
  const out: Charge[] = [];
  for (const b of budgets) {
    const scope = scopeOf(b, place);
    if (scope === undefined) continue;
    const window = periodOf(b.period, tz, now);
    const amount = b.tokens !== undefined ? maxTokens : maxCostMicros(price, maxTokens, audioSeconds);
    out.push({ budget: b, window, claim: { budget: budgetKey(b), scope, period: window.key, limit: limitOf(b), amount } });
  }
  return out;
}

/** The amount a call used, in a budget's unit. */
export const usedOn = (b: Budget, tokens: number, cost: number): number => (b.tokens !== undefined ? tokens : cost);

const WHOSE: Record<Budget["per"], (place: MeterPlace, b: Budget) => string> = {
  user: () => "Your",
  chat: () => "This chat's",
  agent: (p, b) => `The agent ${b.agent ?? p.agent}'s`,
  workspace: () => "This workspace's",
  global: () => "The gateway's",
};

/** The one line a user gets when a budget is used up: which budget, when it resets (DEFAULT_TIMEZONE), whom to ask. */
export function refusalLine(b: Budget, place: MeterPlace, window: PeriodWindow, tz: string): string {
  const what = b.tokens !== undefined ? `token budget (${b.tokens.toLocaleString("en-US")} tokens)` : `cost budget (${formatCost(limitOf(b))})`;
  const when = b.period === "day" ? "daily" : "monthly";
  return `${WHOSE[b.per](place, b)} ${when} ${what} is used up; it resets at ${describeReset(window, tz)}. Ask ${b.contact ?? "an admin"} to raise it.`;
}

/**
 * The one line a user gets when a cost budget applies to a call whose model has no price: such a call could not be
 * counted against it (it would cost 0 whatever the provider bills), so it is refused, and the line says the fix.
 */
export function unpricedLine(b: Budget, place: MeterPlace, model: string): string {
  const when = b.period === "day" ? "daily" : "monthly";
  const whose = WHOSE[b.per](place, b);
  return (
    `The model "${model}" has no price, so ${whose.charAt(0).toLowerCase() + whose.slice(1)} ${when} cost budget (${formatCost(limitOf(b))}) cannot count it, ` +
    `and nothing was sent to it. Switch to a priced model with /model, or ask ${b.contact ?? "an admin"} to add "${model}" to prices in AGENTS_CONFIG.`
  );
}
