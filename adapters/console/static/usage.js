// The operator pane's usage page: this month's model tokens and cost by agent and by model, and every budget's
// counters (spent, reserved, limit, reset time), from GET /api/usage and GET /api/budgets. Hidden where the
// gateway serves no usage API.
import { $, el } from "./dom.js";
import { api } from "./api.js";

function cell(text, cls) {
  return el("td", { class: cls, text });
}

const tokens = (n) => n.toLocaleString();
const cost = (r) => (r.unpriced === r.calls ? "no price" : (r.costMicros / 1e6).toFixed(r.costMicros % 10_000 === 0 ? 2 : 6));

function totalsRows(body, rows) {
  body.replaceChildren();
  for (const r of rows)
    body.append(
      el(
        "tr",
        { "data-key": r.key },
        cell(r.key, "mono"),
        cell(String(r.calls), "num"),
        cell(tokens(r.promptTokens), "num"),
        cell(tokens(r.completionTokens), "num"),
        cell(tokens(r.cachedTokens), "num"),
        cell(cost(r), "num"),
        cell(r.estimated ? `${r.estimated} estimated` : "", "muted"),
      ),
    );
  if (!rows.length) body.append(el("tr", {}, el("td", { class: "muted", colSpan: 7, text: "No model calls this month." })));
}

export async function loadUsage() {
  const section = $("usage");
  let byAgent;
  let byModel;
  let budgets;
  try {
    [byAgent, byModel, { budgets }] = await Promise.all([api("/api/usage?by=agent&since=month"), api("/api/usage?by=model&since=month"), api("/api/budgets")]);
  } catch {
    section.hidden = true;
    return;
  }
  section.hidden = false;
  $("usage-since").textContent = `Since ${new Date(byAgent.since).toLocaleString()} (${byAgent.timezone}).`;
  totalsRows($("usage-agents-body"), byAgent.rows);
  totalsRows($("usage-models-body"), byModel.rows);
  const body = $("budgets-body");
  body.replaceChildren();
  const amount = (b, n) => (b.unit === "tokens" ? tokens(n) : (n / 1e6).toFixed(2));
  for (const b of budgets)
    body.append(
      el(
        "tr",
        { "data-budget": `${b.budget} ${b.scope}` },
        cell(b.budget, "mono"),
        cell(b.scope, "mono"),
        cell(amount(b, b.spent), "num"),
        cell(amount(b, b.reserved), "num"),
        cell(amount(b, b.limit), "num"),
        cell(b.resets),
      ),
    );
  if (!budgets.length) body.append(el("tr", {}, el("td", { class: "muted", colSpan: 6, text: "Nothing spent against a budget this period." })));
}
