/**
 * grammY errors -> AdapterError. The gateway's OutboundScheduler is the one
 * retry mechanism for outbound calls (src/gateway/outbound/scheduler.ts): it waits
 * out 'RateLimited' for retryAfterMs and backs off on 'Transient'. So this
 * adapter never retries a Bot API call itself and does not install
 * @grammyjs/auto-retry: a 429 retried in two places is retried twice, and
 * the scheduler's per-chat and global budgets would be wrong.
 *
 * Messages name the method, Telegram's error code and description, never the
 * payload (it holds the user's text) or the token (it is in the request URL).
 */
import { GrammyError, HttpError } from "grammy";
import { AdapterError } from "../types.js";

export function toAdapterError(err: unknown, method: string): AdapterError {
  if (err instanceof AdapterError) return err;
  if (err instanceof GrammyError) {
    const code = err.error_code;
    const what = `Telegram ${method} failed (${code}: ${err.description})`;
    if (code === 429) {
      const retryAfter = err.parameters.retry_after;
      // Telegram always sends retry_after with 429; 1 s is its smallest value.
      const ms = typeof retryAfter === "number" && retryAfter >= 0 ? retryAfter * 1000 : 1000;
      return new AdapterError("telegram", "RateLimited", `${what}: rate limited, retry after ${ms} ms`, ms);
    }
    if (code >= 500) return new AdapterError("telegram", "Transient", `${what}: Telegram's servers had a problem; retrying may succeed`);
    const migrated = err.parameters.migrate_to_chat_id;
    if (migrated !== undefined)
      return new AdapterError("telegram", "Rejected", `${what}: the group was upgraded to a supergroup with id ${migrated}; send to that chat id instead`);
    if (code === 401 || code === 404)
      return new AdapterError("telegram", "Rejected", `${what}: Telegram does not accept the bot token; check TELEGRAM_BOT_TOKEN with @BotFather`);
    if (code === 400 && /message is too long/i.test(err.description))
      return new AdapterError("telegram", "Rejected", `${what}: the message is over Telegram's 4096 characters; it is split and sent again`, undefined, {
        reason: "too-long",
      });
    if (code === 400 && /can't parse entities/i.test(err.description))
      return new AdapterError("telegram", "Rejected", `${what}: Telegram could not parse the formatting; it is sent again as plain text`, undefined, {
        reason: "bad-format",
      });
    if (code === 403)
      return new AdapterError("telegram", "Rejected", `${what}: the bot may not write there (blocked by the user, removed from the group, or lacks rights)`);
    return new AdapterError("telegram", "Rejected", `${what}: the request was refused and will not succeed if repeated`);
  }
  if (err instanceof HttpError) {
    // Network failures, timeouts and non-JSON answers from a proxy.
    return new AdapterError(
      "telegram",
      "Transient",
      `Telegram ${method} failed: ${err.message} (${innerName(err.error)}); check network access to the Bot API`,
    );
  }
  return new AdapterError("telegram", "Transient", `Telegram ${method} failed unexpectedly (${innerName(err)})`);
}

function innerName(e: unknown): string {
  if (e instanceof Error) {
    const code = (e as { code?: unknown }).code ?? (e.cause as { code?: unknown } | undefined)?.code;
    return typeof code === "string" ? `${e.name} ${code}` : e.name;
  }
  return typeof e;
}

/** A log-safe summary of any error: no payloads, no URLs (the token is in them). */
export function describeError(err: unknown, method = "call"): { code: string; detail: string } {
  const a = toAdapterError(err, method);
  return { code: a.code, detail: a.message };
}
