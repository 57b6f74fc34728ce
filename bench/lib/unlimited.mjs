// Plain JavaScript so both gateway children use it: the one composed from the sources
// (gateway-child.ts, under tsx) and the one running the compiled build (compiled-gateway-child.mjs).

/**
 * Lifts an adapter's declared limits (the fakes never rate-limit), including
 * discord.js's own global limiter (Discord's 50 requests/s per bot), which
 * sits below the gateway's pacing.
 * @template {{ platform: string; limits: object }} A
 * @param {A} a
 * @returns {A}
 */
export function unlimited(a) {
  a.limits = { ...a.limits, perChat: { ratePerSec: 1e6, burst: 1e6 }, global: { ratePerSec: 1e6, burst: 1e6 } };
  const discord = /** @type {{ opts?: { clientOptions?: { rest?: Record<string, unknown> } } }} */ (/** @type {unknown} */ (a));
  if (a.platform === "discord" && discord.opts)
    discord.opts.clientOptions = { ...discord.opts.clientOptions, rest: { ...discord.opts.clientOptions?.rest, globalRequestsPerSecond: 1e6 } };
  return a;
}
