/** True for an IANA time zone name this Node knows (Europe/Paris, UTC, ...). Kept free of croner: config.ts reads it at every start. */
export function isTimeZone(tz: string): boolean {
  if (tz.length === 0 || tz.length > 64) return false;
  // The default, and valid in every Intl: asking Intl loads its time zone data, about 20 ms of a start.
  if (tz === "UTC") return true;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}
