import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { CONFIG_KEYS, ConfigError, loadConfig } from "../src/config.js";

function fail(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error("expected a ConfigError");
}

describe("configuration", () => {
  it("defaults to SQLite under ./data and the console on 127.0.0.1:8787", () => {
    const c = loadConfig({});
    expect(c.DATABASE_URL).toBe("file:./data/switchboard.db");
    expect(c.HTTP_HOST).toBe("127.0.0.1");
    expect(c.HTTP_PORT).toBe(8787);
    expect(c.INBOUND_TTL).toBe(600_000);
    expect(c.DM_POLICY).toBe("pairing");
    expect(c.GROUP_REQUIRE_MENTION).toBe(true);
  });

  it("parses durations, booleans and lists", () => {
    const c = loadConfig({ INBOUND_TTL: "90s", GROUP_REQUIRE_MENTION: "false", ALLOW_FROM: "telegram:1, slack:U2", DATABASE_URL: "postgresql://u@h/db" });
    expect(c.INBOUND_TTL).toBe(90_000);
    expect(c.GROUP_REQUIRE_MENTION).toBe(false);
    expect(c.ALLOW_FROM).toEqual(["telegram:1", "slack:U2"]);
  });

  it.each([
    ["HTTP_PORT", "eighty"],
    ["DM_POLICY", "everyone"],
    ["INBOUND_TTL", "soon"],
    ["DATABASE_URL", "mysql://x"],
    ["TELEGRAM_API_ROOT", "http://127.0.0.1:9/"],
    ["SLACK_API_URL", "http://127.0.0.1:9/api"],
  ])("a bad %s stops with one line naming it and the fix", (name, value) => {
    const e = fail({ [name]: value });
    expect(e.variable).toBe(name);
    expect(e.message.startsWith(name)).toBe(true);
    expect(e.message).not.toContain("\n");
    expect(e.message).toMatch(/\.env\.example/);
  });

  it("never echoes a secret's value in the error", () => {
    const e = fail({ TELEGRAM_BOT_TOKEN: "123:SECRET-TOKEN-VALUE", TELEGRAM_MODE: "webhook" });
    expect(e.variable).toBe("TELEGRAM_WEBHOOK_SECRET");
    expect(e.message).not.toContain("SECRET-TOKEN-VALUE");
  });

  it(".env.example lists every variable, each with a comment", () => {
    const text = fs.readFileSync(".env.example", "utf8");
    const lines = text.split("\n");
    const listed = lines.filter((l) => /^[A-Z_]+=/.test(l)).map((l) => l.split("=")[0]);
    expect(new Set(listed)).toEqual(new Set(CONFIG_KEYS));
    for (const key of CONFIG_KEYS) {
      const i = lines.findIndex((l) => l.startsWith(`${key}=`));
      let j = i - 1;
      while (j >= 0 && /^[A-Z_]+=/.test(lines[j]!)) j--;
      expect(lines[j]?.startsWith("#"), `${key} needs a comment above it`).toBe(true);
    }
  });
});
