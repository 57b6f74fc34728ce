import type { Interceptor } from "./runner.js";

export interface TurnLimitOptions {
  /** USER_TURNS_PER_MINUTE: turns one sender may start in any 60 s. */
  perMinute: number;
  now?: () => number;
  /** At most this many senders are tracked; past it the least recently seen are forgotten. */
  maxSenders?: number;
}

const WINDOW_MS = 60_000;

/**
 * The per-sender rate limit (USER_TURNS_PER_MINUTE), as an interceptor after
 * the commands: a message that would start a turn counts against its
 * sender, across every chat, in a sliding minute; past the limit it is
 * answered politely instead of reaching the model. Commands (/stop, /new)
 * and unaddressed group messages never count; operators are not limited.
 * The counts live in this process: a restart forgets at most one minute
 * of them, which a per-minute limit can afford.
 */
export function turnLimit(o: TurnLimitOptions): Interceptor & { readonly tracked: number } {
  const now = o.now ?? Date.now;
  const max = o.maxSenders ?? 100_000;
  const seen = new Map<string, number[]>();
  const interceptor: Interceptor = (event, ctx, next) => {
    if (!event.respond || event.isAdmin || o.perMinute <= 0) return next();
    const key = event.origin.userId ?? `${event.origin.platform}:${event.origin.senderId}`;
    const t = now();
    const times = (seen.get(key) ?? []).filter((at) => t - at < WINDOW_MS);
    seen.delete(key);
    if (times.length >= o.perMinute) {
      seen.set(key, times);
      const wait = Math.max(1, Math.ceil((times[0]! + WINDOW_MS - t) / 1000));
      ctx.notify("warn", `You're sending messages faster than I can answer: at most ${o.perMinute} a minute. Please wait about ${wait} s and send it again.`);
      return;
    }
    times.push(t);
    seen.set(key, times);
    if (seen.size > max) seen.delete(seen.keys().next().value!);
    return next();
  };
  return Object.defineProperty(interceptor, "tracked", { get: () => seen.size }) as Interceptor & { readonly tracked: number };
}
