/**
 * The Telegram adapter. The gateway builds it from configuration with
 * telegramAdapterFromConfig and drives it through the Adapter contract.
 */
import { TelegramAdapter, type TelegramAdapterOptions } from "./adapter.js";

export { TelegramAdapter, type TelegramAdapterOptions } from "./adapter.js";
export { TELEGRAM_LIMITS } from "./limits.js";
export { normalizeUpdate, type BotIdentity } from "./normalize.js";
export * as telegramIds from "./ids.js";

/** The configuration values the adapter reads (a subset of src/config.ts's Config). */
export interface TelegramConfig {
  TELEGRAM_BOT_TOKEN?: string | undefined;
  TELEGRAM_API_ROOT?: string | undefined;
  TELEGRAM_MODE?: "polling" | "webhook" | undefined;
  TELEGRAM_WEBHOOK_SECRET?: string | undefined;
  TELEGRAM_WEBHOOK_URL?: string | undefined;
}

/**
 * Returns the adapter, or undefined when no TELEGRAM_BOT_TOKEN is set (the
 * platform is simply not enabled). Throws with the fix when the values that
 * are set do not fit together (webhook mode without a secret).
 */
export function telegramAdapterFromConfig(
  config: TelegramConfig,
  extra: Pick<TelegramAdapterOptions, "log" | "pollingTimeoutSec"> = {},
): TelegramAdapter | undefined {
  const token = config.TELEGRAM_BOT_TOKEN?.trim();
  if (!token) return undefined;
  const opts: TelegramAdapterOptions = { token, mode: config.TELEGRAM_MODE ?? "polling", ...extra };
  if (config.TELEGRAM_API_ROOT) opts.apiRoot = config.TELEGRAM_API_ROOT;
  if (config.TELEGRAM_WEBHOOK_SECRET) opts.webhookSecret = config.TELEGRAM_WEBHOOK_SECRET;
  if (config.TELEGRAM_WEBHOOK_URL) opts.webhookUrl = config.TELEGRAM_WEBHOOK_URL;
  return new TelegramAdapter(opts);
}
