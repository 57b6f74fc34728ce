import { describe, expect, it } from "vitest";
import { buildSystemPrompt, DEFAULT_PERSONA_PROMPT, MEMORY_HEADING, parseRetryAfter, personas } from "../../src/agent/index.js";
import { sseData } from "../../src/agent/sse.js";

describe("personas", () => {
  it("always has default, and adds configured personas", () => {
    const reg = personas({ pirate: "Talk like a pirate." });
    expect(reg.names()).toEqual(["default", "pirate"]);
    expect(reg.has("default")).toBe(true);
    expect(reg.get("default")).toBe(DEFAULT_PERSONA_PROMPT);
    expect(reg.get("pirate")).toBe("Talk like a pirate.");
    expect(reg.get("ghost")).toBeUndefined();
    expect(reg.resolve("ghost")).toEqual({ name: "default", prompt: DEFAULT_PERSONA_PROMPT });
    expect(reg.resolve("pirate").prompt).toBe("Talk like a pirate.");
    expect(personas().names()).toEqual(["default"]);
  });

  it("lets configuration override default, and rejects bad entries with what to fix", () => {
    expect(personas({ default: "Custom." }).get("default")).toBe("Custom.");
    expect(() => personas({ "Bad Name": "x" })).toThrow(/persona "Bad Name".*lowercase/);
    expect(() => personas({ empty: "  " })).toThrow(/non-empty text/);
  });
});

describe("buildSystemPrompt", () => {
  it("is the persona prompt alone without memories", () => {
    expect(buildSystemPrompt("Be kind.", [])).toBe("Be kind.");
    expect(buildSystemPrompt("Be kind.", ["  ", ""])).toBe("Be kind.");
  });

  it("adds a Things to remember section with one item per memory", () => {
    expect(buildSystemPrompt("Be kind.", ["Likes tea", "Lives in Oslo\nsince 2020"])).toBe(
      `Be kind.\n\n${MEMORY_HEADING}\n- Likes tea\n- Lives in Oslo\n  since 2020`,
    );
  });
});

describe("parseRetryAfter", () => {
  const h = (o: Record<string, string>) => new Headers(o);
  it("reads seconds, HTTP dates and retry-after-ms", () => {
    const now = Date.parse("2024-01-01T00:00:00Z");
    expect(parseRetryAfter(h({ "retry-after": "3" }), now)).toBe(3000);
    expect(parseRetryAfter(h({ "retry-after": "0.5" }), now)).toBe(500);
    expect(parseRetryAfter(h({ "retry-after": "Mon, 01 Jan 2024 00:00:10 GMT" }), now)).toBe(10_000);
    expect(parseRetryAfter(h({ "retry-after": "Mon, 01 Jan 2023 00:00:10 GMT" }), now)).toBe(0);
    expect(parseRetryAfter(h({ "retry-after-ms": "250", "retry-after": "9" }), now)).toBe(250);
    expect(parseRetryAfter(h({ "retry-after": "soon" }), now)).toBeUndefined();
    expect(parseRetryAfter(h({}), now)).toBeUndefined();
  });
});

describe("sseData", () => {
  async function* from(parts: string[]) {
    yield* parts;
  }
  const all = async (parts: string[]) => {
    const out: string[] = [];
    for await (const d of sseData(from(parts))) out.push(d);
    return out;
  };

  it("joins multi-line data, skips comments and other fields, and handles every line ending", async () => {
    expect(await all(["event: x\nid: 1\ndata: a\ndata: b\n\n", ": ping\r\n\r\n", "data:c\r", "\n\r\n", "data: d\r\rdata: e"])).toEqual(["a\nb", "c", "d", "e"]);
  });
});
