import type { AdapterLimits } from "../types.js";

/**
 * Discord allows 5 messages per 5 s per channel and 50 requests a second
 * per bot; the budgets stay just under them so 429s stay rare. Edits are
 * spaced wider in guild channels, where many people see the stream.
 */
export const DISCORD_LIMITS: AdapterLimits = {
  maxTextLength: 2000,
  editIntervalMs: { private: 1000, group: 1500 },
  perChat: { ratePerSec: 1, burst: 5 },
  global: { ratePerSec: 40, burst: 50 },
  canEdit: true,
};
