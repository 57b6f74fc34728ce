import type { Insertable, Selectable } from "kysely";
import type { Database } from "./db.js";
import type { ModelUsage } from "./generated/kysely/db.js";
import { type Param, prepare } from "./prepared.js";

export type UsageRecord = Selectable<ModelUsage>;
export type NewUsage = Insertable<ModelUsage> & { id: string };
/** A usage row with every column given: what the prepared insert binds. */
type UsageRow = Required<NewUsage>;

/** The schema's defaults (prisma/models.prisma), for the columns a caller leaves out (test/store/usage-defaults.test.ts holds them to it). */
export const USAGE_DEFAULTS = {
  sessionId: "",
  userId: "",
  platform: "",
  chatId: "",
  workspaceId: "",
  promptTokens: 0,
  completionTokens: 0,
  cachedTokens: 0,
  estimated: false,
  costMicros: 0,
  latencyMs: 0,
  priced: true,
} satisfies Partial<UsageRow>;

// Prepared (prepared.ts): one per settled model call, so compiled once rather than by Kysely per call.
const INSERT_USAGE = prepare((b, p: Param<UsageRow>) =>
  b
    .insertInto("ModelUsage")
    .values({
      id: p("id"),
      at: p("at"),
      sessionId: p("sessionId"),
      agent: p("agent"),
      model: p("model"),
      kind: p("kind"),
      userId: p("userId"),
      platform: p("platform"),
      chatId: p("chatId"),
      workspaceId: p("workspaceId"),
      promptTokens: p("promptTokens"),
      completionTokens: p("completionTokens"),
      cachedTokens: p("cachedTokens"),
      estimated: p("estimated"),
      costMicros: p("costMicros"),
      latencyMs: p("latencyMs"),
      priced: p("priced"),
    })
    .onConflict((oc) => oc.column("id").doNothing()),
);

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
  static insertQuery(db: Database, row: NewUsage) {
    const full = { ...USAGE_DEFAULTS, at: new Date() } as UsageRow;
    // A column given as undefined takes its default, as Kysely's values() leaves it out.
    for (const [k, v] of Object.entries(row)) if (v !== undefined) (full as Record<string, unknown>)[k] = v;
    return INSERT_USAGE.bind(db, full);
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
