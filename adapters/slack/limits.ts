import type { AdapterLimits } from "../types.js";

/** Slack's documented limits for the methods a reply uses (chat.postMessage, chat.update). */
export const SLACK_LIMITS: AdapterLimits = {
  // Slack's hard limit is 40k, but messages past ~4000 characters display badly; escaping can grow the text.
  maxTextLength: 3500,
  // chat.update is Tier 3 (~50/min per workspace): streamed edits must be sparse, sparser in busy channels.
  editIntervalMs: { private: 1500, group: 3000 },
  // chat.postMessage allows about 1 message per second per channel, with short bursts.
  perChat: { ratePerSec: 1, burst: 3 },
  // No workspace-wide cap is documented for chat.postMessage; stay well-mannered and let a 429's
  // Retry-After (honoured by the scheduler) slow us further when Slack asks.
  global: { ratePerSec: 50, burst: 50 },
  canEdit: true,
};
