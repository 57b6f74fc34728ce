/**
 * A signed event_callback whose `event` is not an object with a type makes
 * Bolt throw inside processEvent, which the receiver would answer 500 (and
 * Slack would retry). It is the sender's error: 400. Judged only once the
 * request's signature is verified (SlackHttpReceiver.handle): a stranger's
 * body is refused as unsigned, never parsed and judged.
 */
export function malformedEventCallback(body: Record<string, unknown>): boolean {
  if (body.type !== "event_callback") return false;
  const event = body.event;
  if (typeof event !== "object" || event === null || Array.isArray(event) || typeof (event as { type?: unknown }).type !== "string") return true;
  // Slack sends these as strings; Bolt's own middleware reads them before any listener of ours runs.
  const e = event as Record<string, unknown>;
  if (e.type !== "message" && e.type !== "app_mention") return false;
  return ["channel", "user", "ts", "thread_ts", "text", "subtype", "channel_type", "team"].some((k) => k in e && typeof e[k] !== "string");
}
