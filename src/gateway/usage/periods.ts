import { formatLocal, localDate, zonedTime } from "../../runtime/jobs/when.js";

export type BudgetPeriod = "day" | "month";

export interface PeriodWindow {
  /** The counter's period: the local date (2026-12-07) or month (2026-12) in the zone. */
  key: string;
  /** When the period began and when the next one begins (the budget resets), as instants. */
  start: Date;
  resetsAt: Date;
}

const pad = (n: number) => String(n).padStart(2, "0");

/**
 * The budget period holding `at` in the zone (DEFAULT_TIMEZONE): a day runs
 * from local midnight to local midnight (23 or 25 hours across a DST change),
 * a month from the 1st's midnight. Keys are local dates, so every process
 * charges the same counter whatever its host's zone.
 */
export function periodOf(period: BudgetPeriod, tz: string, at: Date): PeriodWindow {
  const d = localDate(tz, at);
  if (period === "day") {
    const next = new Date(Date.UTC(d.year, d.month - 1, d.day + 1));
    return {
      key: `${d.year}-${pad(d.month)}-${pad(d.day)}`,
      start: zonedTime(tz, d.year, d.month, d.day, 0, 0),
      resetsAt: zonedTime(tz, next.getUTCFullYear(), next.getUTCMonth() + 1, next.getUTCDate(), 0, 0),
    };
  }
  const next = new Date(Date.UTC(d.year, d.month, 1));
  return {
    key: `${d.year}-${pad(d.month)}`,
    start: zonedTime(tz, d.year, d.month, 1, 0, 0),
    resetsAt: zonedTime(tz, next.getUTCFullYear(), next.getUTCMonth() + 1, 1, 0, 0),
  };
}

/** `2026-12-08 00:00 (Europe/Paris)`: the reset as the zone's wall clock. */
export const describeReset = (w: PeriodWindow, tz: string) => formatLocal(w.resetsAt, tz);
