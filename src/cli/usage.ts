import type { Config } from "../config.js";
import { USAGE_GROUPS, type UsageGroup } from "../store/usage.js";
import { BudgetStore, UsageStore, type Database } from "../store/index.js";
import { configuredAgents } from "../gateway/wiring/agent.js";
import { periodOf } from "../gateway/usage/periods.js";
import { formatCost } from "../gateway/usage/pricing.js";
import { budgetStatus, resetBudget, showAmount } from "../gateway/usage/report.js";
import { parseDuration } from "../runtime/jobs/when.js";
import { CliError, usageError, type Output } from "./output.js";
import { table } from "./sessions.js";

/** --since: `today`, `month` (in DEFAULT_TIMEZONE), a duration back from now (`7d`, `12h`), or an ISO date or instant. Default: this month. */
export function parseSince(text: string | undefined, tz: string, now: Date): Date {
  if (text === undefined || text === "month") return periodOf("month", tz, now).start;
  if (text === "today") return periodOf("day", tz, now).start;
  const ms = parseDuration(text);
  if (ms !== undefined) return new Date(now.getTime() - ms);
  const at = /^\d{4}-\d{2}-\d{2}/.test(text) ? new Date(text) : new Date(Number.NaN);
  if (Number.isNaN(at.getTime())) throw usageError(`--since wants today, month, a duration such as 7d, or an ISO date such as 2026-12-01; got "${text}"`);
  return at;
}

/** `switchboard usage [--by user|chat|agent|workspace|model] [--since ...]`: token and cost totals from the usage rows. */
export async function usageCommand(db: Database, config: Config, o: { by?: string; since?: string }, out: Output): Promise<number> {
  if (o.by !== undefined && !(o.by in USAGE_GROUPS)) throw usageError(`--by wants one of ${Object.keys(USAGE_GROUPS).join(", ")}; got "${o.by}"`);
  const by = o.by as UsageGroup | undefined;
  const since = parseSince(o.since, config.DEFAULT_TIMEZONE, new Date());
  const rows = await new UsageStore(db).totals({ since }, by);
  const total = rows.reduce(
    (a, r) => ({
      calls: a.calls + r.calls,
      promptTokens: a.promptTokens + r.promptTokens,
      completionTokens: a.completionTokens + r.completionTokens,
      cachedTokens: a.cachedTokens + r.cachedTokens,
      costMicros: a.costMicros + r.costMicros,
      estimated: a.estimated + r.estimated,
      unpriced: a.unpriced + r.unpriced,
    }),
    { calls: 0, promptTokens: 0, completionTokens: 0, cachedTokens: 0, costMicros: 0, estimated: 0, unpriced: 0 },
  );
  const view = rows.map((r) => ({
    [by ?? "total"]: r.key,
    calls: r.calls,
    prompt: r.promptTokens,
    completion: r.completionTokens,
    cached: r.cachedTokens,
    cost: r.unpriced === r.calls ? "no price" : formatCost(r.costMicros) + (r.unpriced ? ` (+${r.unpriced} calls with no price)` : ""),
    estimated: r.estimated,
  }));
  return out.ok({ since: since.toISOString(), by: by ?? null, rows, total }, [
    `Since ${since.toISOString()}${by ? `, by ${by}` : ""}:`,
    ...table(view, [by ?? "total", "calls", "prompt", "completion", "cached", "cost", "estimated"]),
  ]);
}

/** `switchboard budgets` (every counter of the current periods) and `switchboard budgets reset <budget> [scope]`. */
export async function budgetsCommand(db: Database, config: Config, sub: string | undefined, name: string | undefined, scope: string | undefined, out: Output) {
  const budgets = configuredAgents(config).budgets;
  const store = new BudgetStore(db);
  const now = new Date();
  if (sub === "reset") {
    if (!name) throw usageError("budgets reset needs a budget name (switchboard budgets lists them)");
    const r = await resetBudget(budgets, store, config.DEFAULT_TIMEZONE, now, name, scope);
    if ("error" in r) throw new CliError("NotFound", r.error);
    return out.ok({ budget: name, scope: scope ?? null, reset: r.reset }, [
      `Reset ${name}${scope ? ` for ${scope}` : ""}: ${r.reset} counter(s) back to 0 spent.`,
    ]);
  }
  if (sub !== undefined && sub !== "list") throw usageError(`budgets wants list or reset <budget> [scope]; got "${sub}"`);
  const rows = await budgetStatus(budgets, store, config.DEFAULT_TIMEZONE, now);
  const view = rows.map((r) => ({ ...r, spent: showAmount(r.unit, r.spent), reserved: showAmount(r.unit, r.reserved), limit: showAmount(r.unit, r.limit) }));
  return out.ok(
    { budgets: rows },
    budgets.length === 0 ? ["No budgets are set (AGENTS_CONFIG budgets)."] : table(view, ["budget", "scope", "spent", "reserved", "limit", "resets"]),
  );
}
