/**
 * A signed event_callback whose `event` is not an object with a type makes
 * Bolt throw inside processEvent, which the receiver would answer 500 (and
 * Slack would retry). It is the sender's error: 400.
 */
export function malformedEventCallback(raw: Buffer): boolean {
  if (raw.length === 0 || raw[0] !== 0x7b) return false;
  let body: unknown;
  try {
    body = JSON.parse(raw.toString("utf8"));
  } catch {
    return false;
  }
  if (typeof body !== "object" || body === null || (body as { type?: unknown }).type !== "event_callback") return false;
  const event = (body as { event?: unknown }).event;
  if (typeof event !== "object" || event === null || Array.isArray(event) || typeof (event as { type?: unknown }).type !== "string") return true;
  // Slack sends these as strings; Bolt's own middleware reads them before any listener of ours runs.
  const e = event as Record<string, unknown>;
  if (e.type !== "message" && e.type !== "app_mention") return false;
  return ["channel", "user", "ts", "thread_ts", "text", "subtype", "channel_type", "team"].some((k) => k in e && typeof e[k] !== "string");
}
