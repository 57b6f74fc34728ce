import type { AdapterLimits } from "../types.js";

/**
 * Nothing to protect on the other end: limits only need to keep a runaway
 * agent from flooding the page. Edits at 250 ms make streaming visible.
 */
export const CONSOLE_LIMITS: AdapterLimits = {
  maxTextLength: 4000,
  editIntervalMs: { private: 250, group: 250 },
  perChat: { ratePerSec: 50, burst: 100 },
  global: { ratePerSec: 500, burst: 1000 },
  canEdit: true,
};
