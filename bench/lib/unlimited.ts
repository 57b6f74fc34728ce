import type { Adapter, AdapterLimits } from "../../adapters/types.js";

/**
 * Lifts an adapter's declared limits (the fakes never rate-limit), including
 * discord.js's own global limiter (Discord's 50 requests/s per bot), which
 * sits below the gateway's pacing.
 */
export function unlimited(a: Adapter): Adapter {
  (a as { limits: AdapterLimits }).limits = { ...a.limits, perChat: { ratePerSec: 1e6, burst: 1e6 }, global: { ratePerSec: 1e6, burst: 1e6 } };
  const discord = a as unknown as { opts?: { clientOptions?: { rest?: Record<string, unknown> } } };
  if (a.platform === "discord" && discord.opts)
    discord.opts.clientOptions = { ...discord.opts.clientOptions, rest: { ...discord.opts.clientOptions?.rest, globalRequestsPerSecond: 1e6 } };
  return a;
}
