/** True for an IANA time zone name this Node knows (Europe/Paris, UTC, ...). Kept free of croner: config.ts reads it at every start. */
export function isTimeZone(tz: string): boolean {
  if (tz.length === 0 || tz.length > 64) return false;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}
