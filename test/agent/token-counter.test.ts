import fc from "fast-check";
import { countTokens as countHere } from "gpt-tokenizer/encoding/o200k_base";
import { afterAll, describe, expect, it } from "vitest";
import { countTokens, stopTokenCounter, tokenCounterLoaded, whenTokenCounterLoaded } from "../../src/agent/token-counter.js";
import { estimatePromptTokens, estimateTextTokens, promptBound } from "../../src/agent/token-estimate.js";
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

  it("gives the estimates the prompt's framing and the completion's count once loaded", async () => {
    await whenTokenCounterLoaded();
    const messages = [{ role: "user", content: "hello world" }];
    expect(await estimatePromptTokens(messages)).toBe(3 + 4 + countHere(JSON.stringify(messages[0]), plain));
    expect(await estimateTextTokens("")).toBe(0);
    expect(await estimateTextTokens("hello world")).toBe(2);
  });
});

describe("an estimate asked before the tokenizer has loaded", () => {
  // Text people send: printable ASCII of any shape (code, JSON, prose), and the scripts the
  // bound is made for. Rare characters (cuneiform, unassigned planes) can count up to 1.3 times
  // the bound, found by fast-check: a limit of the bound itself, which reservations share.
  const sent = fc.oneof(
    fc.string({ maxLength: 400 }),
    fc.array(fc.constantFrom("今日は", "良い天気", "ですね。", "Привет", "Grüße", "👋🎉", "Ça va?", " ", "\n"), { maxLength: 60 }).map((a) => a.join("")),
  );

  it("is the reservation's bound for a prompt and the UTF-8 bytes of a completion, answered without waiting for the load, and never below the count", async () => {
    await stopTokenCounter();
    const samples = fc.sample(fc.tuple(sent, fc.oneof(sent, fc.string({ unit: "binary", maxLength: 200 }))), 200);
    for (const [prompt, answer] of samples) {
      const messages = [
        { role: "system", content: "be brief" },
        { role: "user", content: prompt },
      ];
      // Stopped each time, so no answer comes from a worker that loaded meanwhile.
      await stopTokenCounter();
      const [p, c] = await Promise.all([estimatePromptTokens(messages), estimateTextTokens(answer)]);
      expect(tokenCounterLoaded()).toBe(false);
      expect(p).toBe(promptBound(messages));
      expect(p).toBeGreaterThanOrEqual(3 + messages.reduce((n, m) => n + 4 + countHere(JSON.stringify(m), plain), 0));
      expect(c).toBe(Buffer.byteLength(answer));
      expect(c).toBeGreaterThanOrEqual(countHere(answer, plain));
    }
  });

  it("starts the load, and the estimates count exactly once it is done", async () => {
    await stopTokenCounter();
    expect(await estimateTextTokens("a reply of a few words")).toBeGreaterThanOrEqual(6);
    await whenTokenCounterLoaded();
    expect(await estimateTextTokens("a reply of a few words")).toBe(6);
  });
});
