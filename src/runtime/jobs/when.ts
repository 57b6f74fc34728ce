import { Cron } from "croner";
import { SwitchboardError } from "../../errors.js";
import { isTimeZone } from "../../config/zone.js";

/**
 * When a scheduled job runs: once at an instant, every fixed interval, or on a
 * cron expression read in the job's IANA time zone (croner), so daylight-saving
 * changes follow the zone: a 09:00 job stays at 09:00 local. In the spring gap
 * a time that does not exist runs at the first valid minute after it; in the
 * autumn overlap a repeated time runs once (its first occurrence).
 */
export type JobKind = "once" | "every" | "cron";

export interface Timing {
  kind: JobKind;
  /** once: ISO instant; every: milliseconds; cron: the expression. */
  spec: string;
  timezone: string;
}

/** The shortest interval a repeating job may have. */
export const MIN_INTERVAL_MS = 60_000;
/** Nothing is scheduled further ahead than this (and no interval is longer): 10 years. */
export const MAX_AHEAD_MS = 10 * 365 * 86_400_000;

/** A schedule that cannot be run as given: the message says what a good one looks like. */
export class TimingError extends SwitchboardError<"Invalid"> {
  override readonly name = "TimingError";
  constructor(message: string) {
    super("Invalid", message);
  }
}

export { isTimeZone };

export function checkTimeZone(tz: string): string {
  if (!isTimeZone(tz)) throw new TimingError(`Unknown time zone "${tz}": use an IANA name such as Europe/Paris, America/New_York or UTC.`);
  return tz;
}

/** Validates a timing; the error says what a good one looks like. */
export function checkTiming(t: Timing): Timing {
  checkTimeZone(t.timezone);
  if (t.kind === "once") {
    if (Number.isNaN(Date.parse(t.spec))) throw new TimingError(`"${t.spec}" is not a time: give an ISO 8601 instant such as 2027-01-05T09:00:00Z.`);
    if (Date.parse(t.spec) > Date.now() + MAX_AHEAD_MS) throw new TimingError(`${t.spec} is too far ahead (at most 10 years).`);
    return { ...t, spec: new Date(t.spec).toISOString() };
  }
  if (t.kind === "every") {
    const ms = Number(t.spec);
    if (!Number.isInteger(ms) || ms < MIN_INTERVAL_MS)
      throw new TimingError(`A repeating job needs an interval of at least ${MIN_INTERVAL_MS / 60_000} minute (got ${t.spec} ms).`);
    if (ms > MAX_AHEAD_MS) throw new TimingError("A repeating job's interval can be at most 10 years.");
    return t;
  }
  if (t.kind === "cron") {
    if (t.spec.trim().split(/\s+/).length !== 5)
      throw new TimingError(`"${t.spec}" is not a cron expression: give five fields (minute hour day month weekday), e.g. "0 9 * * 1-5".`);
    try {
      if (!new Cron(t.spec, { timezone: t.timezone, paused: true }).nextRun()) throw new Error("never runs");
    } catch (e) {
      throw new TimingError(`"${t.spec}" is not a cron expression croner accepts (${(e as Error).message}); e.g. "0 9 * * 1-5".`);
    }
    return { ...t, spec: t.spec.trim().split(/\s+/).join(" ") };
  }
  throw new TimingError(`Unknown schedule kind "${String(t.kind)}": once, every or cron.`);
}

/**
 * The first due time strictly after `after` (null: never again). An interval
 * keeps its phase: the next time is `anchor + k * interval`, so a late run
 * never drifts the schedule.
 */
export function nextAfter(t: Timing, after: Date, anchor?: Date): Date | null {
  if (t.kind === "once") {
    const at = new Date(t.spec);
    return at.getTime() > after.getTime() ? at : null;
  }
  if (t.kind === "every") {
    const ms = Number(t.spec);
    const base = (anchor ?? after).getTime();
    if (base > after.getTime()) return new Date(base);
    const k = Math.floor((after.getTime() - base) / ms) + 1;
    return new Date(base + k * ms);
  }
  return new Cron(t.spec, { timezone: t.timezone, paused: true }).nextRun(after) ?? null;
}

/** A zone's offset from UTC (ms) at an instant. */
function offsetAt(tz: string, at: number): number {
  const parts = new Intl.DateTimeFormat("en-US", {
    timeZone: tz,
    hourCycle: "h23",
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
  }).formatToParts(new Date(at));
  const v = (type: string) => Number(parts.find((p) => p.type === type)?.value);
  return Date.UTC(v("year"), v("month") - 1, v("day"), v("hour"), v("minute"), v("second")) - Math.floor(at / 1000) * 1000;
}

/** The local calendar date in a zone at an instant. */
export function localDate(tz: string, at: Date): { year: number; month: number; day: number } {
  const local = new Date(at.getTime() + offsetAt(tz, at.getTime()));
  return { year: local.getUTCFullYear(), month: local.getUTCMonth() + 1, day: local.getUTCDate() };
}

/** The instant a local wall-clock time in a zone names (a time in the spring gap moves forward by the gap). */
export function zonedTime(tz: string, year: number, month: number, day: number, hour: number, minute: number): Date {
  const wall = Date.UTC(year, month - 1, day, hour, minute);
  let t = wall - offsetAt(tz, wall);
  t = wall - offsetAt(tz, t);
  return new Date(t);
}

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** `10m`, `1h30m`, `90s`, `2d`: milliseconds, or undefined. */
export function parseDuration(text: string): number | undefined {
  const s = text.trim().toLowerCase();
  if (!/^(\d+\s*[smhdw]\s*)+$/.test(s)) return undefined;
  let ms = 0;
  for (const m of s.matchAll(/(\d+)\s*([smhdw])/g)) ms += Number(m[1]) * UNITS[m[2]!]!;
  return ms > 0 && ms <= MAX_AHEAD_MS ? ms : undefined;
}

const CLOCK = /^(\d{1,2})(?::(\d{2}))?$/;

function clock(text: string): { hour: number; minute: number } | undefined {
  const m = CLOCK.exec(text);
  if (!m) return undefined;
  const hour = Number(m[1]);
  const minute = Number(m[2] ?? 0);
  return hour <= 23 && minute <= 59 ? { hour, minute } : undefined;
}

/**
 * Reads the `<when>` of `/remind <when> <text>` from the start of `input`:
 * `in 10m`, `at 18:00` (today, or tomorrow once passed), `tomorrow 9:00`,
 * an ISO time (`2027-01-05T09:00`, in the chat's zone unless it names an
 * offset), `every 1h`, or `cron <five fields>`. Returns the timing and the
 * rest of the input (the text), or an error that shows the forms.
 */
export function parseWhen(input: string, tz: string, now: Date): { timing: Timing; rest: string } | { error: string } {
  const words = input.trim().split(/\s+/);
  const usage = "Say when: in 10m, at 18:00, tomorrow 9:00, 2027-01-05T09:00, every 1h or cron 0 9 * * 1-5, then the text.";
  const once = (at: Date, used: number) => ({ timing: { kind: "once" as const, spec: at.toISOString(), timezone: tz }, rest: words.slice(used).join(" ") });
  const head = (words[0] ?? "").toLowerCase();
  if (head === "in") {
    const ms = parseDuration(words[1] ?? "");
    if (ms === undefined) return { error: `"${words[1] ?? ""}" is not a duration (e.g. 10m, 2h, 1h30m, 1d). ${usage}` };
    return once(new Date(now.getTime() + ms), 2);
  }
  if (head === "at" || head === "tomorrow" || head === "today") {
    const c = clock(words[1] ?? "");
    if (!c) return { error: `"${words[1] ?? ""}" is not a time of day (e.g. 18:00 or 9:30). ${usage}` };
    const today = localDate(tz, now);
    let at = zonedTime(tz, today.year, today.month, today.day, c.hour, c.minute);
    if (head === "tomorrow" || (head === "at" && at.getTime() <= now.getTime())) {
      const next = new Date(Date.UTC(today.year, today.month - 1, today.day + 1));
      at = zonedTime(tz, next.getUTCFullYear(), next.getUTCMonth() + 1, next.getUTCDate(), c.hour, c.minute);
    }
    if (at.getTime() <= now.getTime()) return { error: `${words[1]} today has passed; say "at ${words[1]}" or "tomorrow ${words[1]}".` };
    return once(at, 2);
  }
  if (head === "every") {
    const ms = parseDuration(words[1] ?? "");
    if (ms === undefined || ms < MIN_INTERVAL_MS) return { error: `"${words[1] ?? ""}" is not an interval of at least 1 minute (e.g. 30m, 1d). ${usage}` };
    return { timing: { kind: "every", spec: String(ms), timezone: tz }, rest: words.slice(2).join(" ") };
  }
  if (head === "cron") {
    const spec = words.slice(1, 6).join(" ");
    try {
      return { timing: checkTiming({ kind: "cron", spec, timezone: tz }), rest: words.slice(6).join(" ") };
    } catch (e) {
      return { error: (e as Error).message };
    }
  }
  const iso = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::\d{2}(?:\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/i.exec(words[0] ?? "");
  if (iso) {
    const [y, mo, d, h, mi] = iso.slice(1, 6).map(Number) as [number, number, number, number, number];
    const calendar = new Date(Date.UTC(y, mo - 1, d));
    if (mo < 1 || mo > 12 || calendar.getUTCDate() !== d || h > 23 || mi > 59) return { error: `"${words[0]}" is not a valid time. ${usage}` };
    const at = iso[6] ? new Date(words[0]!) : zonedTime(tz, y, mo, d, h, mi);
    if (Number.isNaN(at.getTime())) return { error: `"${words[0]}" is not a valid time. ${usage}` };
    if (at.getTime() <= now.getTime()) return { error: `${words[0]} is in the past. ${usage}` };
    return once(at, 1);
  }
  return { error: usage };
}

const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?$/i;

/**
 * A one-off time as the HTTP API and the CLI take it: ISO 8601 with a date and a time of day; without an
 * offset it is read in `tz` (the job's zone, as /remind reads it), never the server's.
 */
export function parseAt(spec: string, tz: string, now: Date): Timing {
  if (!ISO_TIME.test(spec)) throw new TimingError(`"${spec}" is not an ISO 8601 time (e.g. 2027-01-05T09:00:00Z, or 2027-01-05T09:00 in the job's time zone)`);
  const r = parseWhen(spec, tz, now);
  if ("error" in r) throw new TimingError(r.error);
  return r.timing;
}

/** A timing for people: "once at 2027-01-05 09:00 (Europe/Paris)", "every 1h", "cron 0 9 * * * (Europe/Paris)". */
export function describeTiming(t: Timing): string {
  if (t.kind === "once") return `once at ${formatLocal(new Date(t.spec), t.timezone)}`;
  if (t.kind === "every") return `every ${formatDuration(Number(t.spec))}`;
  return `cron ${t.spec} (${t.timezone})`;
}

export function formatDuration(ms: number): string {
  const parts: string[] = [];
  for (const [u, n] of [
    ["d", 86_400_000],
    ["h", 3_600_000],
    ["m", 60_000],
    ["s", 1000],
  ] as const) {
    if (ms >= n) {
      parts.push(`${Math.floor(ms / n)}${u}`);
      ms %= n;
    }
  }
  return parts.join("") || "0s";
}

/** `2027-01-05 09:00 (Europe/Paris)`. */
export function formatLocal(at: Date, tz: string): string {
  const local = new Date(at.getTime() + offsetAt(tz, at.getTime()));
  return `${local.toISOString().slice(0, 16).replace("T", " ")} (${tz})`;
}
