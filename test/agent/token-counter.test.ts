import fc from "fast-check";
import { countTokens as countHere } from "gpt-tokenizer/encoding/o200k_base";
import { afterAll, describe, expect, it } from "vitest";
import { countTokens, stopTokenCounter } from "../../src/agent/token-counter.js";
import { estimatePromptTokens, estimateTextTokens } from "../../src/agent/token-estimate.js";
import { isAgentError } from "../../src/agent/types.js";

const plain = { disallowedSpecial: new Set<string>() };

afterAll(() => stopTokenCounter());

describe("the token counter's worker thread", () => {
  it("counts every text as the tokenizer does on the calling thread, special tokens as plain text", async () => {
    const texts = fc.sample(fc.oneof(fc.string({ maxLength: 300 }), fc.string({ unit: "grapheme", maxLength: 300 }), fc.constant("<|endoftext|> hi")), 300);
    expect(await countTokens(texts)).toEqual(texts.map((t) => countHere(t, plain)));
  });

  it("answers concurrent counts each with its own texts", async () => {
    const texts = Array.from({ length: 50 }, (_, i) => "word ".repeat(i));
    const answers = await Promise.all(texts.map((t) => countTokens([t])));
    expect(answers.map(([n]) => n)).toEqual(texts.map((t) => countHere(t, plain)));
  });

  it("fails a count waiting on a worker that stopped with a Config error, and the next count starts a new worker", async () => {
    const waiting = countTokens(["x ".repeat(200_000)]);
    await stopTokenCounter();
    const err = await waiting.catch((e: unknown) => e);
    expect(isAgentError(err, "Config")).toBe(true);
    expect(await countTokens(["hello world"])).toEqual([2]);
  });

  it("gives the estimates the prompt's framing and the completion's count", async () => {
    const messages = [{ role: "user", content: "hello world" }];
    expect(await estimatePromptTokens(messages)).toBe(3 + 4 + countHere(JSON.stringify(messages[0]), plain));
    expect(await estimateTextTokens("")).toBe(0);
    expect(await estimateTextTokens("hello world")).toBe(2);
  });
});
