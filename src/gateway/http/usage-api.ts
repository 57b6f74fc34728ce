import type { Budget } from "../../config/agents.js";
import type { BudgetStore } from "../../store/budgets.js";
import { USAGE_GROUPS, type UsageGroup, type UsageStore } from "../../store/usage.js";
import type { HttpHandler } from "../adapter.js";
import { periodOf } from "../usage/periods.js";
import { budgetStatus } from "../usage/report.js";
import { json } from "./server.js";

export interface UsageApiDeps {
  usage: UsageStore;
  budgets: BudgetStore;
  configured: readonly Budget[];
  /** DEFAULT_TIMEZONE. */
  timezone: string;
}

const SINCE = { today: "day", month: "month" } as const;

/**
 * The console's usage page (operator): GET /api/usage?by=agent|model|user|chat|workspace&since=today|month|<ISO>
 * (totals from the usage rows; this month by default, in DEFAULT_TIMEZONE), and GET /api/budgets (every
 * budget counter of the current periods: spent, reserved, limit, reset time).
 */
export function mountUsageApi(route: (method: "GET" | "POST", path: string, handler: HttpHandler) => void, d: UsageApiDeps): void {
  route("GET", "/api/usage", async (req) => {
    const by = req.query.get("by") ?? "agent";
    if (!(by in USAGE_GROUPS)) return json(400, { error: `by must be one of ${Object.keys(USAGE_GROUPS).join(", ")}` });
    const sinceText = req.query.get("since") ?? "month";
    const now = new Date();
    const since = sinceText in SINCE ? periodOf(SINCE[sinceText as keyof typeof SINCE], d.timezone, now).start : new Date(sinceText);
    if (Number.isNaN(since.getTime()) || !/^(today|month|\d{4}-\d{2}-\d{2}.*)$/.test(sinceText))
      return json(400, { error: "since must be today, month or an ISO date such as 2026-12-01" });
    const rows = await d.usage.totals({ since }, by as UsageGroup);
    return json(200, { since: since.toISOString(), by, timezone: d.timezone, rows });
  });
  route("GET", "/api/budgets", async () => json(200, { budgets: await budgetStatus(d.configured, d.budgets, d.timezone, new Date()) }));
}
