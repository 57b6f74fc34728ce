import type { AdapterLimits } from "../types.js";

/**
 * Telegram's documented limits: about 1 message a second in one chat (with
 * short bursts), 20 a minute in a group, 30 a second for the whole bot.
 * The contract has one per-chat budget, so groups run on the per-chat one
 * and the rare 429 beyond it is waited out by the scheduler via
 * retry_after. Streamed edits are spaced wider in groups for the same reason.
 *
 * The bot-wide bucket lets through at most burst + rate sends in any one
 * second: 20/s with a burst of 1 keeps the bot at 21 or fewer by the
 * times the tokens are granted (22 in shared mode, where a token may be
 * spent up to 50 ms after its time: src/gateway/outbound/shared-budget.ts).
 * The rest, up to Telegram's 30, is for sends that bunch up between the
 * grant and the platform (a busy event loop, the network): three processes
 * answering 300 chats at once on a loaded 2-core machine were seen 5-9 over
 * the rate by the receiver's clock (25/s reached 34; 20/s peaked at 24-26).
 * 30/s with a burst of 30 let 59 through in the second after an idle spell.
 */
export const TELEGRAM_LIMITS: AdapterLimits = {
  maxTextLength: 4096,
  editIntervalMs: { private: 1000, group: 3000 },
  perChat: { ratePerSec: 1, burst: 3 },
  global: { ratePerSec: 20, burst: 1 },
  canEdit: true,
};
