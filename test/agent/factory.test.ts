import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  approveAll,
  builtinTools,
  createAgentFactory,
  METADATA_KEYS,
  parseMaxOutputTokens,
  parseModelName,
  parseTemperature,
  parseThinkingLevel,
  settingsFromMetadata,
  type ModelSettings,
} from "../../src/agent/index.js";
import { FakeOpenAi, textReply, toolCallReply } from "../fakes/openai.js";
import { KEY, memoryLog, runTurn } from "./helpers.js";

describe("parsers", () => {
  it("accept valid values", () => {
    expect(parseModelName(" llama3.1:8b ")).toEqual({ ok: true, value: "llama3.1:8b" });
    expect(parseModelName("meta-llama/Llama-3.1-8B-Instruct")).toMatchObject({ ok: true });
    expect(parseThinkingLevel("HIGH")).toEqual({ ok: true, value: "high" });
    expect(parseThinkingLevel("off")).toEqual({ ok: true, value: "off" });
    expect(parseTemperature("0.7")).toEqual({ ok: true, value: 0.7 });
    expect(parseTemperature(0)).toEqual({ ok: true, value: 0 });
    expect(parseTemperature("2")).toEqual({ ok: true, value: 2 });
    expect(parseMaxOutputTokens("1024")).toEqual({ ok: true, value: 1024 });
  });

  it("reject bad values and say what is allowed", () => {
    for (const bad of ["", "   ", "gpt 4", "x".repeat(201), "---", 42]) {
      const r = parseModelName(bad);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.error).toMatch(/for example gpt-4o-mini/);
    }
    for (const bad of ["extreme", "", 1]) {
      const r = parseThinkingLevel(bad);
      expect(r).toEqual({ ok: false, error: "The thinking level must be one of off, low, medium, high." });
    }
    for (const bad of ["hot", "", "-0.1", "2.5", "NaN", "Infinity", Number.NaN, null]) {
      const r = parseTemperature(bad);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.error).toMatch(/from 0 to 2/);
    }
    for (const bad of ["0", "1.5", "lots", "2000000"]) expect(parseMaxOutputTokens(bad).ok).toBe(false);
  });
});

describe("settingsFromMetadata", () => {
  const defaults: ModelSettings = { model: "base", thinkingLevel: "low", temperature: 1, maxOutputTokens: 500 };

  it("prefers valid metadata over the defaults", () => {
    const s = settingsFromMetadata(
      { [METADATA_KEYS.model]: "other", [METADATA_KEYS.thinkingLevel]: "off", [METADATA_KEYS.temperature]: "0.2", [METADATA_KEYS.maxOutputTokens]: 64 },
      defaults,
    );
    expect(s).toEqual({ model: "other", thinkingLevel: "off", temperature: 0.2, maxOutputTokens: 64 });
  });

  it("falls back to the default for each invalid or missing value", () => {
    const invalid: string[] = [];
    const s = settingsFromMetadata(
      { [METADATA_KEYS.model]: "bad name", [METADATA_KEYS.temperature]: 9, [METADATA_KEYS.thinkingLevel]: "medium" },
      defaults,
      invalid,
    );
    expect(s).toEqual({ model: "base", thinkingLevel: "medium", temperature: 1, maxOutputTokens: 500 });
    expect(invalid.sort()).toEqual([METADATA_KEYS.model, METADATA_KEYS.temperature].sort());
    expect(settingsFromMetadata({}, { model: "m" })).toEqual({ model: "m" });
  });

  it("takes the operator's max output tokens as a ceiling: /maxtokens lowers it, never raises it (a budget's overrun is one call's maximum)", () => {
    const max = (v: number, d?: number) =>
      settingsFromMetadata({ [METADATA_KEYS.maxOutputTokens]: v }, { model: "m", ...(d !== undefined && { maxOutputTokens: d }) }).maxOutputTokens;
    expect(max(64, 500)).toBe(64);
    expect(max(1_000_000, 500)).toBe(500);
    // No ceiling set: the session's choice stands.
    expect(max(1_000_000)).toBe(1_000_000);
  });
});

describe("createAgentFactory", () => {
  let fake: FakeOpenAi;
  beforeEach(async () => {
    fake = await FakeOpenAi.start();
  });
  afterEach(async () => {
    await fake.close();
  });

  it("uses echo when no provider is configured", async () => {
    const factory = createAgentFactory({});
    expect(factory.provider).toBe("echo");
    const agent = factory({ [METADATA_KEYS.model]: "gpt-4o" });
    expect(agent.name).toBe("echo");
    expect((await runTurn(agent, { messages: [{ role: "user", content: "ping" }] })).text).toBe("echo: ping");
    expect(createAgentFactory({ baseUrl: " ", apiKey: "" }).provider).toBe("echo");
  });

  it("builds each turn's agent from metadata over the defaults, ignoring invalid values", async () => {
    const { log, lines } = memoryLog();
    const factory = createAgentFactory({ baseUrl: fake.baseUrl, apiKey: KEY, model: "default-model", temperature: 0.5, maxOutputTokens: 100, log });
    expect(factory.provider).toBe("openai");
    fake.enqueue(textReply(["one"]), textReply(["two"]));

    const first = await runTurn(
      factory({ [METADATA_KEYS.model]: "session-model", [METADATA_KEYS.thinkingLevel]: "medium", [METADATA_KEYS.temperature]: "hot" }),
    );
    expect(first.text).toBe("one");
    const second = await runTurn(factory({}));
    expect(second.text).toBe("two");

    expect(fake.requests[0]?.body).toMatchObject({ model: "session-model", reasoning_effort: "medium", temperature: 0.5, max_tokens: 100 });
    expect(fake.requests[1]?.body).toMatchObject({ model: "default-model", temperature: 0.5, max_tokens: 100 });
    expect(fake.requests[1]?.body.reasoning_effort).toBeUndefined();
    expect(lines()).toContain(METADATA_KEYS.temperature);
    expect(lines()).not.toContain(KEY);
  });

  it("fails at startup, saying what to fix, when the configuration is incomplete or invalid", () => {
    expect(() => createAgentFactory({ baseUrl: fake.baseUrl })).toThrow(/OPENAI_MODEL/);
    expect(() => createAgentFactory({ baseUrl: "not a url", model: "m" })).toThrow(/OPENAI_BASE_URL/);
    expect(() => createAgentFactory({ baseUrl: fake.baseUrl, model: "m", temperature: 7 })).toThrow(/from 0 to 2/);
    try {
      createAgentFactory({ apiKey: KEY });
    } catch (e) {
      expect(String(e)).not.toContain(KEY);
    }
  });

  it("takes per-turn tools and approval over the configured ones", async () => {
    const factory = createAgentFactory({ baseUrl: fake.baseUrl, model: "m", tools: builtinTools() });
    const seen: string[] = [];
    fake.enqueue(toolCallReply([{ name: "search_sessions", arguments: '{"query":"q"}' }]), textReply(["ok"]));
    const agent = factory({}, { tools: builtinTools({ searchSessions: async (q) => (seen.push(q), "hit") }), approval: approveAll });
    expect((await runTurn(agent)).text).toBe("ok");
    expect(seen).toEqual(["q"]);
  });

  it("defaults to OpenAI itself when only a key is given", () => {
    const agent = createAgentFactory({ apiKey: KEY, model: "gpt-4o-mini" })({});
    expect(agent.name).toBe("openai:gpt-4o-mini");
  });
});
