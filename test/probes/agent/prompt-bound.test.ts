/**
 * Probe: a budget's guarantee ("the tokens spent never exceed a limit by more
 * than one call's maximum", README, Usage and budgets) rests on the
 * reservation being at or above what the call can use: promptBound must not
 * be under the prompt's count. Half a token per ASCII character is under the
 * o200k_base count for text people do paste: base64 (an image or a key),
 * a hex dump, minified or random-looking ASCII. Each such call then spends
 * more than it reserved, and N of them admitted together overrun a budget
 * by N times the difference. The real tokenizer (o200k_base, in its worker).
 */
import { beforeAll, expect, it } from "vitest";
import { estimatePromptTokens, promptBound } from "../../../src/agent/token-estimate.js";
import { whenTokenCounterLoaded } from "../../../src/agent/token-counter.js";

beforeAll(() => whenTokenCounterLoaded());

// Deterministic pseudo-random bytes (no Math.random: the same text every run).
function bytes(n: number, seed = 7): Buffer {
  const out = Buffer.alloc(n);
  let x = seed;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    out[i] = x >> 16;
  }
  return out;
}

const system = { role: "system", content: "You are a helpful assistant." };
const pastes: Array<[string, string]> = [
  ["a base64 paste", `decode this please:\n${bytes(3000).toString("base64")}`],
  ["a hex dump", `what is in this dump?\n${bytes(2000).toString("hex")}`],
  ["printable ASCII noise", [...bytes(4000)].map((b) => String.fromCharCode(33 + (b % 94))).join("")],
];

it.each(pastes)("%s: the prompt's reservation is at or above its o200k_base count", async (_what, text) => {
  const messages = [system, { role: "user", content: text }];
  const counted = await estimatePromptTokens(messages);
  expect(promptBound(messages)).toBeGreaterThanOrEqual(counted);
});
