import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { CONFIG_KEYS, ConfigError, loadConfig } from "../src/config.js";
import { parseDockerfile } from "./deploy/dockerfile.js";

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

  it("parses PERSONAS into named prompts, and refuses what is not a JSON object of texts with what to write", () => {
    expect(loadConfig({}).PERSONAS).toEqual({});
    expect(loadConfig({ PERSONAS: '{"pirate": "Talk like a pirate."}' }).PERSONAS).toEqual({ pirate: "Talk like a pirate." });
    for (const bad of ["{pirate: 1}", '{"pirate": 5}', '["pirate"]']) {
      const e = fail({ PERSONAS: bad });
      expect(e.variable).toBe("PERSONAS");
      expect(e.message).toMatch(/^PERSONAS must be a JSON object of persona names to prompts, e\.g\. \{"pirate"/);
    }
  });

  it("parses durations, booleans and lists", () => {
    const c = loadConfig({ INBOUND_TTL: "90s", GROUP_REQUIRE_MENTION: "false", ALLOW_FROM: "telegram:1, slack:U2", DATABASE_URL: "postgresql://u@h/db" });
    expect(c.INBOUND_TTL).toBe(90_000);
    expect(c.GROUP_REQUIRE_MENTION).toBe(false);
    expect(c.ALLOW_FROM).toEqual(["telegram:1", "slack:U2"]);
  });

  it("keeps records at least 1h (RECORD_RETENTION): a redelivered hook or event must still find its record", () => {
    expect(fail({ RECORD_RETENTION: "10m" }).message).toMatch(/RECORD_RETENTION.*at least 1h/);
    expect(loadConfig({ RECORD_RETENTION: "1h" }).RECORD_RETENTION).toBe(3_600_000);
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

  it.each([
    [{ SLACK_SIGNING_SECRET: "abc123signing" }, "SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET"],
    [{ SLACK_APP_TOKEN: "xapp-1-A0-2-secretapp" }, "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN"],
    [{ SLACK_SIGNING_SECRET: "abc123signing", SLACK_APP_TOKEN: "xapp-1-A0-2-secretapp" }, "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN"],
    [{ SLACK_BOT_TOKEN: "xoxb-1-2-secretbot" }, "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN"],
  ])("half-filled Slack settings (%o) are an error naming the missing one", (env, missing, mentioned) => {
    const e = fail(env);
    expect(e.variable).toBe(missing);
    expect(e.message.startsWith(`${missing} is required`)).toBe(true);
    expect(e.message).toContain(mentioned);
    for (const v of Object.values(env)) expect(e.message).not.toContain(v);
  });

  it("`docker run --env-file .env` with .env.example's values listens on 0.0.0.0 and keeps the image's DATABASE_URL", () => {
    // What docker does: the image's ENV, then each KEY=VALUE line of the env file over it, taken literally.
    const image = parseDockerfile("Dockerfile").at(-1)!.env;
    const envFile = Object.fromEntries(
      fs
        .readFileSync(".env.example", "utf8")
        .split("\n")
        .filter((l) => /^[A-Za-z_][A-Za-z0-9_]*=/.test(l))
        .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
    );
    const env = { ...image, ...envFile };
    // A console on 0.0.0.0 needs OPERATOR_TOKEN, which the README's Deploy section has the user set.
    expect(fail(env).variable).toBe("OPERATOR_TOKEN");
    const c = loadConfig({ ...env, OPERATOR_TOKEN: "0123456789abcdef0123456789abcdef" });
    expect(c.HTTP_HOST).toBe("0.0.0.0");
    expect(c.DATABASE_URL).toBe("file:/data/switchboard.db");
    expect(c.HTTP_PORT).toBe(Number(image.HTTP_PORT));
    // And outside a container the same file keeps the defaults: loopback and ./data.
    const local = loadConfig(envFile);
    expect(local.HTTP_HOST).toBe("127.0.0.1");
    expect(local.DATABASE_URL).toBe("file:./data/switchboard.db");
  });

  it(".env.example lists every variable, each with a comment", () => {
    const text = fs.readFileSync(".env.example", "utf8");
    // A variable is listed as KEY=value, or as "# KEY=value" when setting it would be wrong somewhere (in containers).
    const lines = text.split("\n").map((l) => l.replace(/^# (?=[A-Z_]+=)/, ""));
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
