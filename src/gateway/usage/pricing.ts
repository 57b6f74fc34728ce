import type { Price } from "../../config/agents.js";
import type { ModelUsage } from "../../agent/model-meter.js";

/** A model's price in the table, if it has one of its own: a model named `constructor` or `toString` finds no inherited member. */
export function priceOf(prices: Readonly<Record<string, Price>>, model: string): Price | undefined {
  return Object.hasOwn(prices, model) ? prices[model] : undefined;
}

/**
 * Cost in micro-units of the price table's currency (integers: the database
 * keeps no floats). A price is per million tokens, so a token costs exactly
 * `price` micro-units. Cached prompt tokens are part of the prompt tokens
 * (OpenAI's accounting) and cost `cachedInput` (the input price when none).
 */
export function costMicros(price: Price | undefined, u: Pick<ModelUsage, "promptTokens" | "completionTokens" | "cachedTokens" | "audioSeconds">): number {
  if (!price) return 0;
  if (u.audioSeconds !== undefined && price.perMinute !== undefined) return Math.round((u.audioSeconds / 60) * price.perMinute * 1_000_000);
  const cached = Math.min(u.cachedTokens, u.promptTokens);
  return Math.round((u.promptTokens - cached) * price.input + cached * (price.cachedInput ?? price.input) + u.completionTokens * price.output);
}

/**
 * The most a call of `maxTokens` tokens may cost: every token at the dearer of the input and output prices, plus,
 * for a transcription of `audioSeconds` (the platform's duration) at a `perMinute` price, that audio's cost. A call
 * is settled by one or the other (costMicros), so the sum bounds either.
 */
export function maxCostMicros(price: Price | undefined, maxTokens: number, audioSeconds?: number): number {
  if (!price) return 0;
  const audio = audioSeconds !== undefined && price.perMinute !== undefined ? Math.ceil((audioSeconds / 60) * price.perMinute * 1_000_000) : 0;
  return Math.ceil(maxTokens * Math.max(price.input, price.output)) + audio;
}

/** `$1.234567`-style money from micro-units (the currency is the operator's; shown without a symbol). */
export function formatCost(micros: number): string {
  return (micros / 1_000_000).toFixed(micros % 10_000 === 0 ? 2 : 6).replace(/(\.\d\d\d*?)0+$/, "$1");
}
