import type { Budget } from "../../config/agents.js";
import type { CommandSpec } from "../../runtime/commands/spec.js";
import type { BudgetStore } from "../../store/budgets.js";
import type { UsageStore } from "../../store/usage.js";
import { budgetStatus, resetBudget, showAmount, usageLines } from "./report.js";

export interface UsageCommandDeps {
  usage: UsageStore;
  budgets: BudgetStore;
  configured: readonly Budget[];
  /** DEFAULT_TIMEZONE. */
  timezone: string;
  now?: () => Date;
}

/** `/usage` (anyone: this chat and the asking user) and `/budget` (admins: every budget's counters, and reset). */
export function usageCommands(d: UsageCommandDeps): CommandSpec[] {
  const now = d.now ?? (() => new Date());
  return [
    {
      name: "usage",
      summary: "model tokens and cost used in this chat and by you, today and this month",
      async run(ctx) {
        const { origin } = ctx.event;
        const lines = await usageLines(d.usage, { userId: origin.userId, platform: origin.platform, chatId: origin.chatId }, d.timezone, now());
        ctx.notify("info", lines.join("\n"));
      },
    },
    {
      name: "budget",
      summary: "the usage budgets: spent, reserved, limit and reset time; /budget reset <budget> [scope] (operators)",
      usage: "/budget [reset <budget> [scope]]",
      // Every place's budgets, the global ones included: ADMIN_USERS only, never a workspace's installer.
      access: "operator",
      async run(ctx) {
        const [sub, name, scope] = ctx.args.trim().split(/\s+/).filter(Boolean);
        if (sub === "reset") {
          if (!name) return ctx.notify("warn", "Usage: /budget reset <budget> [scope]; /budget lists them.");
          const r = await resetBudget(d.configured, d.budgets, d.timezone, now(), name, scope);
          if ("error" in r) return ctx.notify("error", r.error);
          return ctx.notify("success", `Reset ${name}${scope ? ` for ${scope}` : ""}: ${r.reset} counter${r.reset === 1 ? "" : "s"} back to 0 spent.`);
        }
        if (sub) return ctx.notify("warn", "Usage: /budget, or /budget reset <budget> [scope].");
        if (d.configured.length === 0) return ctx.notify("info", "No budgets are set (AGENTS_CONFIG budgets).");
        const rows = await budgetStatus(d.configured, d.budgets, d.timezone, now());
        if (rows.length === 0) return ctx.notify("info", "Nothing has been spent against any budget this period.");
        const shown = rows
          .slice(0, 30)
          .map(
            (r) =>
              `${r.budget} ${r.scope}: ${showAmount(r.unit, r.spent)} spent, ${showAmount(r.unit, r.reserved)} reserved of ${showAmount(r.unit, r.limit)}; resets ${r.resets}`,
          );
        if (rows.length > shown.length) shown.push(`… and ${rows.length - shown.length} more (switchboard budgets lists them all).`);
        ctx.notify("info", shown.join("\n"));
      },
    },
  ];
}
