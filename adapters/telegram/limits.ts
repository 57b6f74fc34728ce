import type { AdapterLimits } from "../types.js";

/**
 * Telegram's documented limits: about 1 message a second in one chat (with
 * short bursts), 20 a minute in a group, 30 a second for the whole bot.
 * The contract has one per-chat budget, so groups run on the per-chat one
 * and the rare 429 beyond it is waited out by the scheduler via
 * retry_after. Streamed edits are spaced wider in groups for the same reason.
 */
export const TELEGRAM_LIMITS: AdapterLimits = {
  maxTextLength: 4096,
  editIntervalMs: { private: 1000, group: 3000 },
  perChat: { ratePerSec: 1, burst: 3 },
  global: { ratePerSec: 30, burst: 30 },
  canEdit: true,
};
