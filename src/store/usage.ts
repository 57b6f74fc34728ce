import type { Insertable, Selectable } from "kysely";
import type { Database } from "./db.js";
import type { ModelUsage } from "./generated/kysely/db.js";
import type { QueryBuilder } from "./sql.js";

export type UsageRecord = Selectable<ModelUsage>;
export type NewUsage = Insertable<ModelUsage> & { id: string };

/** What `switchboard usage --by` groups on: each a column of the row. */
export const USAGE_GROUPS = { user: "userId", chat: "chatId", agent: "agent", workspace: "workspaceId", model: "model" } as const;
export type UsageGroup = keyof typeof USAGE_GROUPS;

export interface UsageTotals {
  key: string;
  calls: number;
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
  costMicros: number;
  /** Calls counted by a tokenizer estimate (the provider sent no usage). */
  estimated: number;
  /** Calls of a model with no price (their cost is 0). */
  unpriced: number;
}

export interface UsageFilter {
  since?: Date;
  userId?: string;
  platform?: string;
  chatId?: string;
}

/**
 * Model usage (issue 29): one row per model call. Rows are written by the
 * budget store's settlement (BudgetStore.settle, in one transaction with the
 * counters) through `insertQuery`; this class reads them.
 */
export class UsageStore {
  constructor(readonly db: Database) {}

  /**
   * The row's insert, idempotent on the call's id (a settlement retried after a failure writes it once).
   * `at` is always written from here: SQLite's column default (CURRENT_TIMESTAMP) is text of another shape
   * than the ISO instants the time filters compare with.
   */
  static insertQuery(q: QueryBuilder, row: NewUsage) {
    return q
      .insertInto("ModelUsage")
      .values({ ...row, at: row.at ?? new Date() })
      .onConflict((oc) => oc.column("id").doNothing());
  }

  /** Totals per group (or one total, key "all"), largest cost and then tokens first. */
  async totals(filter: UsageFilter, by?: UsageGroup): Promise<UsageTotals[]> {
    const q = this.db.q;
    let s = q.selectFrom("ModelUsage");
    if (filter.since) s = s.where("at", ">=", filter.since);
    if (filter.userId !== undefined) s = s.where("userId", "=", filter.userId);
    if (filter.platform !== undefined) s = s.where("platform", "=", filter.platform);
    if (filter.chatId !== undefined) s = s.where("chatId", "=", filter.chatId);
    const col = by ? USAGE_GROUPS[by] : undefined;
    const sel = s.select((eb) => [
      eb.fn.countAll<number>().as("calls"),
      eb.fn.coalesce(eb.fn.sum<number>("promptTokens"), eb.lit(0)).as("promptTokens"),
      eb.fn.coalesce(eb.fn.sum<number>("completionTokens"), eb.lit(0)).as("completionTokens"),
      eb.fn.coalesce(eb.fn.sum<number>("cachedTokens"), eb.lit(0)).as("cachedTokens"),
      eb.fn.coalesce(eb.fn.sum<number>("costMicros"), eb.lit(0)).as("costMicros"),
      eb.fn.coalesce(eb.fn.sum<number>(eb.case().when("estimated", "=", true).then(1).else(0).end()), eb.lit(0)).as("estimated"),
      eb.fn.coalesce(eb.fn.sum<number>(eb.case().when("priced", "=", false).then(1).else(0).end()), eb.lit(0)).as("unpriced"),
    ]);
    const rows = col ? await this.db.query("usage-totals", sel.select((eb) => eb.ref(col).as("key")).groupBy(col)) : await this.db.query("usage-totals", sel);
    return rows
      .map((r) => {
        const row = r as Record<string, unknown>;
        return {
          key: col ? String(row.key) : "all",
          calls: Number(row.calls),
          promptTokens: Number(row.promptTokens),
          completionTokens: Number(row.completionTokens),
          cachedTokens: Number(row.cachedTokens),
          costMicros: Number(row.costMicros),
          estimated: Number(row.estimated),
          unpriced: Number(row.unpriced),
        };
      })
      .filter((t) => t.calls > 0)
      .sort((a, b) => b.costMicros - a.costMicros || b.promptTokens + b.completionTokens - (a.promptTokens + a.completionTokens) || a.key.localeCompare(b.key));
  }

  /** Rows in order of time (tests, and the console's recent list). */
  async recent(limit: number, filter: UsageFilter = {}): Promise<UsageRecord[]> {
    let s = this.db.q.selectFrom("ModelUsage").selectAll();
    if (filter.since) s = s.where("at", ">=", filter.since);
    if (filter.userId !== undefined) s = s.where("userId", "=", filter.userId);
    if (filter.chatId !== undefined) s = s.where("chatId", "=", filter.chatId);
    return this.db.query("usage-recent", s.orderBy("at", "desc").orderBy("id").limit(limit));
  }
}
