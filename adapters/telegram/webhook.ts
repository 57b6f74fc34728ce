/**
 * The webhook route: Telegram POSTs one Update per request, with the secret
 * given to setWebhook in X-Telegram-Bot-Api-Secret-Token.
 *
 * The answer is the acknowledgement: Telegram redelivers on anything but a
 * 2xx. So 200 is sent only after ctx.inbound resolved (durably recorded), and
 * a failure to record answers 500 to have Telegram try again later. The same
 * update delivered twice is passed to inbound twice: dropping duplicates is
 * the gateway's job (it dedupes on eventId), not this handler's.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { Logger } from "../../src/log.js";
import type { HttpHandler, HttpResponse, InboundEnvelope } from "../types.js";
import { chatMigrationOf, isJsonObject, normalizeUpdate, type BotIdentity } from "./normalize.js";

export const SECRET_HEADER = "x-telegram-bot-api-secret-token";

export interface WebhookHandlerOptions {
  secret: string;
  bot: () => BotIdentity;
  inbound: (env: InboundEnvelope) => Promise<unknown>;
  /** A press of an approval card's button (answered inside, never a redelivery matter). */
  callback?: (q: import("grammy/types").CallbackQuery) => Promise<void>;
  /** A group became a supergroup (migrate_to/from_chat_id): move it before acknowledging. */
  migrated?: (fromChatId: string, toChatId: string) => Promise<void>;
  /** false after stop(): answer 503 so Telegram keeps the update for later. */
  accepting: () => boolean;
  log: Logger;
  /** Counts a failure to record (switchboard_internal_errors_total). */
  onError?: (where: string, err: unknown) => void;
}

const text = (status: number, body: string): HttpResponse => ({ status, headers: { "content-type": "text/plain; charset=utf-8" }, body });

/**
 * Constant-time comparison. Hashing first gives both sides the same length,
 * so not even the secret's length leaks through timing.
 */
export function secretMatches(given: string, expected: string): boolean {
  return secretCheck(expected)(given);
}

const sha256 = (s: string) => createHash("sha256").update(s, "utf8").digest();

/** secretMatches against one secret, whose digest is taken once (the edge and the handler each check every update). */
export function secretCheck(expected: string): (given: string) => boolean {
  const digest = sha256(expected);
  return (given) => timingSafeEqual(sha256(given), digest);
}

/** Telegram's updates are small; 1 MB bounds what a sender without the secret could make us hold. */
export const MAX_UPDATE_BYTES = 1024 * 1024;

/**
 * The secret check on the headers alone, run by the HTTP edge before the
 * body is read (the edge counts and logs the refusal, rate-limited).
 */
export function webhookPrecheck(secret: string): (req: { headers: Record<string, string | string[] | undefined> }) => HttpResponse | undefined {
  const matches = secretCheck(secret);
  return (req) => {
    const header = req.headers[SECRET_HEADER];
    if (typeof header === "string" && matches(header)) return undefined;
    return text(401, "unauthorized: X-Telegram-Bot-Api-Secret-Token does not match TELEGRAM_WEBHOOK_SECRET");
  };
}

export function createWebhookHandler(o: WebhookHandlerOptions): HttpHandler {
  const matches = secretCheck(o.secret);
  return async (req) => {
    const header = req.headers[SECRET_HEADER];
    // A repeated header is not something Telegram sends; refuse rather than pick one.
    if (typeof header !== "string" || !matches(header)) {
      o.log.warn({ path: req.path, hasHeader: header !== undefined }, "telegram webhook: missing or wrong secret token; request refused");
      return text(401, "unauthorized: X-Telegram-Bot-Api-Secret-Token does not match TELEGRAM_WEBHOOK_SECRET");
    }
    if (!o.accepting()) return text(503, "the Telegram adapter is stopped");
    let update: unknown;
    try {
      update = JSON.parse(req.rawBody.toString("utf8"));
    } catch {
      return text(400, "bad request: the body is not JSON");
    }
    if (!isJsonObject(update)) return text(400, "bad request: the body is not a Telegram Update object");
    const migration = chatMigrationOf(update);
    if (migration) {
      try {
        await o.migrated?.(migration.from, migration.to);
      } catch (err) {
        o.log.warn(
          { error: err instanceof Error ? err.name : typeof err },
          "telegram webhook: moving a migrated group failed; answering 500 so Telegram redelivers it",
        );
        return text(500, "could not record the update; Telegram will retry");
      }
    }
    if (isJsonObject(update.callback_query) && o.callback) {
      await o.callback(update.callback_query as unknown as import("grammy/types").CallbackQuery);
      return text(200, "");
    }
    const env = normalizeUpdate(update, o.bot(), (err) => {
      o.onError?.("telegram-normalize", err);
      o.log.error(
        { updateId: update.update_id, err: err instanceof Error ? err.name : typeof err },
        "telegram: an update could not be normalized; acknowledged and not answered",
      );
    });
    if (env) {
      try {
        await o.inbound(env);
      } catch (err) {
        o.onError?.("telegram-webhook", err);
        o.log.error(
          { eventId: env.eventId, error: err instanceof Error ? err.name : typeof err },
          "telegram webhook: recording the update failed; answering 500 so Telegram redelivers it",
        );
        return text(500, "could not record the update; Telegram will retry");
      }
    }
    // Updates that start no turn (edits, unknown types) are acknowledged too, or Telegram would resend them forever.
    return text(200, "");
  };
}
