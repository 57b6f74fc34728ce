import { sql, type Selectable } from "kysely";
import type { Database } from "./db.js";
import type { BudgetCounter } from "./generated/kysely/db.js";
import { type Param, prepare } from "./prepared.js";
import { UsageStore, type NewUsage } from "./usage.js";

export type BudgetCounterRecord = Selectable<BudgetCounter>;

/** One budget a call is charged to: its counter (budget, scope, period), its limit, and what the call may spend on it. */
export interface BudgetClaim {
  budget: string;
  scope: string;
  period: string;
  /** The budget's limit in its unit (tokens, or cost micro-units). */
  limit: number;
  /** The call's maximum in the budget's unit. */
  amount: number;
}

/** A settled reservation: what was released from `reserved` and added to `spent` on one counter. */
export interface Settlement {
  budget: string;
  scope: string;
  period: string;
  reserved: number;
  spent: number;
}

const key = (c: { budget: string; scope: string; period: string }) => `${c.budget}\u0000${c.scope}\u0000${c.period}`;
/** Counters are always locked in this order, so two processes charging the same budgets never wait on each other in a cycle. */
const inLockOrder = <T extends { budget: string; scope: string; period: string }>(xs: T[]) =>
  [...xs].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));

type Counter = { budget: string; scope: string; period: string };

// Prepared (prepared.ts): run for every metered model call, so compiled once rather than by Kysely per call.
const ENSURE_COUNTER = prepare((b, p: Param<Counter & { zero: number }>) =>
  b
    .insertInto("BudgetCounter")
    .values({ budget: p("budget"), scope: p("scope"), period: p("period"), spent: p("zero"), reserved: p("zero") })
    .onConflict((oc) => oc.columns(["budget", "scope", "period"]).doNothing()),
);
const COUNTER = prepare((b, p: Param<Counter>, { provider }) => {
  const sel = b
    .selectFrom("BudgetCounter")
    .select(["spent", "reserved"])
    .where("budget", "=", p("budget"))
    .where("scope", "=", p("scope"))
    .where("period", "=", p("period"));
  return provider === "postgresql" ? sel.forUpdate() : sel;
});
const RESERVE = prepare((b, p: Param<Counter & { amount: number; at: Date }>) =>
  b
    .updateTable("BudgetCounter")
    .set((eb) => ({ reserved: eb("reserved", "+", p("amount")), updatedAt: p("at") }))
    .where("budget", "=", p("budget"))
    .where("scope", "=", p("scope"))
    .where("period", "=", p("period")),
);
type ReservationRow = Counter & { id: string; amount: number; expiresAt: Date };
const INSERT_RESERVATIONS = prepare((b, p: Param<Record<string, never>, ReservationRow>, { rows }) =>
  b.insertInto("BudgetReservation").values(
    Array.from({ length: rows }, (_, i) => ({
      id: p.row(i, "id"),
      budget: p.row(i, "budget"),
      scope: p.row(i, "scope"),
      period: p.row(i, "period"),
      amount: p.row(i, "amount"),
      expiresAt: p.row(i, "expiresAt"),
    })),
  ),
);
const TAKE_RESERVATIONS = prepare((b, p: Param<{ id: string }>) =>
  b.deleteFrom("BudgetReservation").where("id", "=", p("id")).returning(["budget", "scope", "period", "amount"]),
);
const APPLY = prepare((b, p: Param<Counter & { reserved: number; spent: number; at: Date }>) =>
  b
    .updateTable("BudgetCounter")
    // Never below zero: a reset (which keeps reserved) then a settlement must not leave a negative count.
    .set((eb) => ({
      reserved: sql<number>`CASE WHEN ${eb.ref("reserved")} > ${p("reserved")} THEN ${eb.ref("reserved")} - ${p("reserved")} ELSE 0 END`,
      spent: eb("spent", "+", p("spent")),
      updatedAt: p("at"),
    }))
    .where("budget", "=", p("budget"))
    .where("scope", "=", p("scope"))
    .where("period", "=", p("period")),
);

/**
 * Budget counters and reservations (issue 29). A model call reserves its
 * maximum on every budget that applies in ONE transaction (each counter row
 * upserted, then locked: PostgreSQL `SELECT ... FOR UPDATE`; SQLite's
 * transactions already hold its one write lock), refused when spent plus
 * reserved has reached a limit; it settles in one transaction (reserved -=
 * its reservation, spent += what it used, the reservation deleted, its
 * usage row written). A reservation left by a crashed process is settled
 * by the sweep at its reserved amount once it expires. Reservations are
 * taken by a DELETE ... RETURNING, so a settlement and the sweep apply each
 * one exactly once, whichever comes first.
 */
export class BudgetStore {
  constructor(readonly db: Database) {}

  /** Reserves `claims` for call `id`; returns the first claim whose budget is used up (nothing reserved then). */
  async reserve(id: string, claims: BudgetClaim[], expiresAt: Date): Promise<{ refused?: BudgetClaim & { spent: number; reserved: number } }> {
    if (claims.length === 0) return {};
    const db = this.db;
    return db.sqlTransaction("budget-reserve", async (s) => {
      const ordered = inLockOrder(claims);
      for (const c of ordered) {
        const counter = { budget: c.budget, scope: c.scope, period: c.period };
        await s.run(ENSURE_COUNTER.bind(db, { ...counter, zero: 0 }));
        const [row] = await s.all(COUNTER.bind(db, counter));
        const spent = Number(row?.spent ?? 0);
        const reserved = Number(row?.reserved ?? 0);
        if (spent + reserved >= c.limit) return { refused: { ...c, spent, reserved } };
      }
      const at = new Date();
      for (const c of ordered) await s.run(RESERVE.bind(db, { budget: c.budget, scope: c.scope, period: c.period, amount: c.amount, at }));
      await s.run(
        INSERT_RESERVATIONS.bind(
          db,
          {},
          ordered.map((c) => ({ id, budget: c.budget, scope: c.scope, period: c.period, amount: c.amount, expiresAt })),
        ),
      );
      return {};
    });
  }

  /**
   * Settles call `id`: each of its reservations still held is released and
   * `spent(budget)` charged instead, and the call's usage row is written, in
   * one transaction. Idempotent: a retry (or a reservation the sweep took
   * first) charges nothing twice.
   */
  async settle(id: string, spent: (budget: string) => number, usage?: NewUsage): Promise<Settlement[]> {
    const db = this.db;
    return db.sqlTransaction("budget-settle", async (s) => {
      const taken = await s.all(TAKE_RESERVATIONS.bind(db, { id }));
      const out: Settlement[] = [];
      for (const r of inLockOrder(taken)) {
        const charge = Math.max(0, Math.round(spent(r.budget)));
        await this.#apply(s, r, Number(r.amount), charge);
        out.push({ budget: r.budget, scope: r.scope, period: r.period, reserved: Number(r.amount), spent: charge });
      }
      if (usage) await s.run(UsageStore.insertQuery(db, usage));
      return out;
    });
  }

  /** Settles every reservation past its expiry at its reserved amount (its process may have been charged, then died). */
  async sweepExpired(now: Date, limit = 200): Promise<(Settlement & { id: string })[]> {
    const q = this.db.q;
    const due = await this.db.query(
      "budget-sweep-due",
      q.selectFrom("BudgetReservation").select(["id", "budget"]).where("expiresAt", "<", now).orderBy("expiresAt").limit(limit),
    );
    const out: (Settlement & { id: string })[] = [];
    for (const d of due) {
      const settled = await this.db.sqlTransaction("budget-sweep", async (s) => {
        const [r] = await s.all(
          q.deleteFrom("BudgetReservation").where("id", "=", d.id).where("budget", "=", d.budget).returning(["budget", "scope", "period", "amount"]),
        );
        if (!r) return undefined; // settled meanwhile by its call, or by another process's sweep
        await this.#apply(s, r, Number(r.amount), Number(r.amount));
        return { id: d.id, budget: r.budget, scope: r.scope, period: r.period, reserved: Number(r.amount), spent: Number(r.amount) };
      });
      if (settled) out.push(settled);
    }
    return out;
  }

  async #apply(s: import("./sql.js").Sql, c: Counter, reserved: number, spent: number): Promise<void> {
    await s.run(APPLY.bind(this.db, { budget: c.budget, scope: c.scope, period: c.period, reserved, spent, at: new Date() }));
  }

  /** The counters of the given budgets' periods (every scope), most spent first. */
  async counters(current: { budget: string; period: string }[]): Promise<BudgetCounterRecord[]> {
    if (current.length === 0) return [];
    const rows = await this.db.query(
      "budget-counters",
      this.db.q
        .selectFrom("BudgetCounter")
        .selectAll()
        .where((eb) => eb.or(current.map((c) => eb.and([eb("budget", "=", c.budget), eb("period", "=", c.period)])))),
    );
    return rows.sort((a, b) => Number(b.spent) - Number(a.spent) || a.budget.localeCompare(b.budget) || a.scope.localeCompare(b.scope));
  }

  /** Sets spent back to 0 for a budget's period (one scope, or every scope); open reservations stay. Returns the counters reset. */
  async reset(budget: string, period: string, scope?: string): Promise<number> {
    let u = this.db.q.updateTable("BudgetCounter").set({ spent: 0, updatedAt: new Date() }).where("budget", "=", budget).where("period", "=", period);
    if (scope !== undefined) u = u.where("scope", "=", scope);
    return this.db.exec("budget-reset", u);
  }

  /** Open reservations (tests, and `switchboard budgets`). */
  async openReservations(): Promise<{ id: string; budget: string; scope: string; period: string; amount: number; expiresAt: Date }[]> {
    const rows = await this.db.query("budget-reservations", this.db.q.selectFrom("BudgetReservation").selectAll().orderBy("expiresAt"));
    return rows.map((r) => ({ ...r, amount: Number(r.amount) }));
  }
}
