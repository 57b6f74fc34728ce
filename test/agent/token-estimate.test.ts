import { describe, expect, it } from "vitest";
import { estimatePromptTokens, promptBound } from "../../src/agent/token-estimate.js";

describe("a reservation's prompt bound", () => {
  it("is at or above the tokenizer's count for English, CJK and code, without loading the tokenizer", async () => {
    const samples = [
      "The quick brown fox jumps over the lazy dog. ".repeat(20),
      "今日は良い天気ですね。明日も晴れるといいですね。".repeat(10),
      "function add(a, b) { return a + b; } // sum\n".repeat(15),
      JSON.stringify({ id: "call_1", args: { path: "/src/a.ts", lines: [1, 2, 3], flags: { x: true, y: null } } }).repeat(10),
      "Привет! 👋🎉 Ça va? Grüße aus Köln. ".repeat(10),
    ];
    for (const text of samples) {
      const messages = [{ role: "user", content: text }];
      expect(promptBound(messages)).toBeGreaterThanOrEqual(await estimatePromptTokens(messages));
    }
  });

  it("counts an image part as an image (about 1,500 tokens), not by the bytes of its data: URL", () => {
    const image = `data:image/png;base64,${"A".repeat(300_000)}`;
    const messages = [
      {
        role: "user",
        content: [
          { type: "text", text: "what is this?" },
          { type: "image_url", image_url: { url: image } },
        ],
      },
    ];
    const bound = promptBound(messages);
    // 1,500 for the image and the message's own bytes (about 120): the URL's 300,000 bytes count for nothing.
    expect(bound).toBeGreaterThan(1500);
    expect(bound).toBeLessThan(1700);
  });
});
