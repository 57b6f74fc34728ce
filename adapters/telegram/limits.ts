import type { AdapterLimits } from "../types.js";

/**
 * Telegram's documented limits: about 1 message a second in one chat (with
 * short bursts), 20 a minute in a group, 30 a second for the whole bot.
 * The contract has one per-chat budget, so groups run on the per-chat one
 * and the rare 429 beyond it is waited out by the scheduler via
 * retry_after. Streamed edits are spaced wider in groups for the same reason.
 *
 * The bot-wide bucket lets through at most burst + rate sends in any one
 * second, so 25/s with a burst of 1 keeps the bot at 26 or fewer in any
 * 1 s window. In shared mode (the database's bucket, one for every process
 * of the bot: src/gateway/outbound/shared-budget.ts) a token may be spent up
 * to 50 ms after its time, so 27. That leaves three sends (120 ms at 25/s)
 * under Telegram's 30 for sends that bunch up on the way (a busy event loop,
 * the network): a run of three processes on a loaded machine with a burst
 * of 3 and 100 ms saw 31. 30/s with a burst of 30 let 59 through in the
 * second after an idle spell.
 */
export const TELEGRAM_LIMITS: AdapterLimits = {
  maxTextLength: 4096,
  editIntervalMs: { private: 1000, group: 3000 },
  perChat: { ratePerSec: 1, burst: 3 },
  global: { ratePerSec: 25, burst: 1 },
  canEdit: true,
};
