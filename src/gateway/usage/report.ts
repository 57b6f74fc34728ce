import type { Budget } from "../../config/agents.js";
import type { BudgetStore } from "../../store/budgets.js";
import type { UsageFilter, UsageStore, UsageTotals } from "../../store/usage.js";
import { budgetKey, limitOf } from "./budgets.js";
import { describeReset, periodOf } from "./periods.js";
import { formatCost } from "./pricing.js";

/** One budget counter as people see it (`switchboard budgets`, `/budget`, the console). */
export interface BudgetStatus {
  budget: string;
  scope: string;
  period: string;
  unit: "tokens" | "cost";
  spent: number;
  reserved: number;
  limit: number;
  /** When the period ends, as an instant and in DEFAULT_TIMEZONE's wall clock. */
  resetsAt: string;
  resets: string;
}

/** Amounts in a budget's unit for people: tokens as a number, cost from micro-units. */
export const showAmount = (unit: "tokens" | "cost", n: number): string => (unit === "tokens" ? n.toLocaleString("en-US") : formatCost(n));

/** Every counter of the configured budgets' current periods (a budget nobody has used yet shows no counter). */
export async function budgetStatus(budgets: readonly Budget[], store: BudgetStore, tz: string, now: Date): Promise<BudgetStatus[]> {
  const byKey = new Map(budgets.map((b) => [budgetKey(b), { b, w: periodOf(b.period, tz, now) }]));
  const counters = await store.counters([...byKey].map(([budget, { w }]) => ({ budget, period: w.key })));
  return counters.flatMap((c) => {
    const found = byKey.get(c.budget);
    if (!found) return [];
    return [
      {
        budget: c.budget,
        scope: c.scope,
        period: c.period,
        unit: found.b.tokens !== undefined ? ("tokens" as const) : ("cost" as const),
        spent: Number(c.spent),
        reserved: Number(c.reserved),
        limit: limitOf(found.b),
        resetsAt: found.w.resetsAt.toISOString(),
        resets: describeReset(found.w, tz),
      },
    ];
  });
}

/** Resets a budget's current period (one scope, or all); an unknown budget is an error naming the ones there are. */
export async function resetBudget(
  budgets: readonly Budget[],
  store: BudgetStore,
  tz: string,
  now: Date,
  name: string,
  scope?: string,
): Promise<{ reset: number } | { error: string }> {
  const b = budgets.find((x) => budgetKey(x) === name);
  if (!b) return { error: `No budget is named "${name}". The budgets are: ${budgets.map(budgetKey).join(", ") || "(none: AGENTS_CONFIG sets no budgets)"}.` };
  return { reset: await store.reset(name, periodOf(b.period, tz, now).key, scope) };
}

const line = (t: UsageTotals | undefined) => {
  if (!t) return "nothing";
  const cost = t.costMicros > 0 ? `, cost ${formatCost(t.costMicros)}` : "";
  const marks = [t.estimated ? `${t.estimated} estimated` : "", t.unpriced ? `${t.unpriced} with no price` : ""].filter(Boolean).join(", ");
  return `${(t.promptTokens + t.completionTokens).toLocaleString("en-US")} tokens in ${t.calls} calls${cost}${marks ? ` (${marks})` : ""}`;
};

/** `/usage`: this chat and the asking user, today and this month, and this month by agent (the chat's). */
export async function usageLines(store: UsageStore, at: { userId?: string; platform: string; chatId: string }, tz: string, now: Date): Promise<string[]> {
  const day = periodOf("day", tz, now).start;
  const month = periodOf("month", tz, now).start;
  const chat: UsageFilter = { platform: at.platform, chatId: at.chatId };
  const [chatDay, chatMonth, byAgent] = await Promise.all([
    store.totals({ ...chat, since: day }),
    store.totals({ ...chat, since: month }),
    store.totals({ ...chat, since: month }, "agent"),
  ]);
  const lines = [`This chat today: ${line(chatDay[0])}; this month: ${line(chatMonth[0])}.`];
  if (at.userId) {
    const [youDay, youMonth] = await Promise.all([store.totals({ userId: at.userId, since: day }), store.totals({ userId: at.userId, since: month })]);
    lines.push(`You today: ${line(youDay[0])}; this month: ${line(youMonth[0])}.`);
  }
  if (byAgent.length) lines.push(`This chat this month by agent: ${byAgent.map((t) => `${t.key} ${line(t)}`).join("; ")}.`);
  lines.push(`(Days and months in ${tz}.)`);
  return lines;
}
