import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../src/config.js";
import { transcribeBaseUrl } from "../src/gateway/media.js";

const fails = (env: Record<string, string>) => {
  try {
    loadConfig(env);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    expect((e as Error).message).not.toContain("\n");
    return e as ConfigError;
  }
  throw new Error("expected a ConfigError");
};

describe("media, speaker and cost-control settings", () => {
  it("defaults: vision off, 5 MB images, 25 MB audio, 30 s downloads, name field, no model list, no rate limit", () => {
    const c = loadConfig({});
    expect([
      c.MODEL_VISION,
      c.IMAGE_MAX_BYTES,
      c.AUDIO_MAX_BYTES,
      c.MEDIA_TIMEOUT,
      c.TRANSCRIBE_MODEL,
      c.MODEL_SPEAKER_NAMES,
      c.MODELS_ALLOWED,
      c.USER_TURNS_PER_MINUTE,
    ]).toEqual([false, 5_242_880, 26_214_400, 30_000, undefined, "name", [], 0]);
  });

  it("bad values stop the start with one line naming the variable", () => {
    expect(fails({ MODEL_VISION: "maybe" }).variable).toBe("MODEL_VISION");
    expect(fails({ IMAGE_MAX_BYTES: "5MB" }).message).toMatch(/^IMAGE_MAX_BYTES must be a whole number from 1024 to/);
    expect(fails({ MODEL_SPEAKER_NAMES: "brackets" }).variable).toBe("MODEL_SPEAKER_NAMES");
    expect(fails({ MODELS_ALLOWED: "gpt-4o, big model" }).message).toContain('got "big model"');
    expect(fails({ USER_TURNS_PER_MINUTE: "-1" }).variable).toBe("USER_TURNS_PER_MINUTE");
    expect(fails({ TRANSCRIBE_MODEL: "whisper 1" }).variable).toBe("TRANSCRIBE_MODEL");
  });

  it("TRANSCRIBE_MODEL needs a server: TRANSCRIBE_BASE_URL, else OPENAI_BASE_URL, else OpenAI itself with a key", () => {
    expect(fails({ TRANSCRIBE_MODEL: "whisper-1" }).variable).toBe("TRANSCRIBE_BASE_URL");
    expect(transcribeBaseUrl(loadConfig({ TRANSCRIBE_MODEL: "whisper-1", TRANSCRIBE_BASE_URL: "http://stt:9000/v1", OPENAI_BASE_URL: "http://llm/v1" }))).toBe(
      "http://stt:9000/v1",
    );
    expect(transcribeBaseUrl(loadConfig({ TRANSCRIBE_MODEL: "whisper-1", OPENAI_BASE_URL: "http://llm/v1" }))).toBe("http://llm/v1");
    expect(transcribeBaseUrl(loadConfig({ TRANSCRIBE_MODEL: "whisper-1", OPENAI_API_KEY: "sk-x" }))).toBe("https://api.openai.com/v1");
  });
});
