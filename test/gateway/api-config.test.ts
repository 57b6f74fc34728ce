/** API_TOKENS and HOOKS_CONFIG: their syntax, and a bad value stops the start with one line that never shows a secret. */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";
import { parseApiTokens } from "../../src/config/api-tokens.js";
import { parseHooksConfig } from "../../src/config/hooks.js";
import { renderPrompt } from "../../src/gateway/http/api/hook-prompt.js";
import { ApiTokens } from "../../src/gateway/http/api/tokens.js";

const T1 = "0123456789abcdef0123456789abcdef";
const T2 = "fedcba9876543210fedcba9876543210";

function fail(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error("expected a ConfigError");
}

describe("API_TOKENS", () => {
  it("parses names, scopes and tokens, and finds the caller of a bearer token", () => {
    const tokens = parseApiTokens(`ci:send+read:${T1},\ncron:*:${T2}`);
    // `*` is every scope, admin (every caller's jobs and deliveries) included.
    expect(tokens.map((t) => [t.name, [...t.scopes].sort()])).toEqual([
      ["ci", ["read", "send"]],
      ["cron", ["admin", "read", "schedule", "send"]],
    ]);
    const auth = new ApiTokens(tokens, "operator-token-000000");
    expect(auth.principal(`Bearer ${T1}`)?.name).toBe("ci");
    expect(auth.principal(`bearer ${T2}`)?.name).toBe("cron");
    expect(auth.principal("Bearer operator-token-000000")?.name).toBe("operator");
    expect(auth.principal(`Bearer ${T1}x`)).toBeUndefined();
    expect(auth.principal(T1)).toBeUndefined();
    expect(new ApiTokens([]).required).toBe(false);
  });

  it.each([
    [`ci:send:short`, "32-256"],
    [`ci:post:${T1}`, 'unknown scope "post"'],
    [`Bad Name:send:${T1}`, "bad name"],
    [`ci:send:${T1},ci:read:${T2}`, "used twice"],
    [`a:send:${T1},b:read:${T1}`, "repeats another entry's token"],
    [`operator:send:${T1}`, "reserved"],
    [`ci:${T1}`, "<name>:<scopes>:<token>"],
  ])("refuses %s, naming the variable and never the token", (value, words) => {
    const e = fail({ API_TOKENS: value });
    expect(e.variable).toBe("API_TOKENS");
    expect(e.message).toContain(words);
    expect(e.message).not.toContain(T1);
    expect(e.message.split("\n")).toHaveLength(1);
  });
});

describe("HOOKS_CONFIG", () => {
  const hook = {
    secret: "s".repeat(40),
    conversation: { platform: "slack", chat: "C0123ABCD" },
    prompt: "Deploy {{json.service}}: {{json.status}} ({{hook}}/{{delivery}})",
  };

  it("reads inline JSON or a file, and fills the prompt from the body", () => {
    const inline = parseHooksConfig(JSON.stringify({ deploys: hook }));
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "hooks-")), "hooks.json");
    fs.writeFileSync(file, JSON.stringify({ deploys: hook }));
    expect(parseHooksConfig(file)).toEqual(inline);
    expect(inline[0]!.maxBodyBytes).toBe(64 * 1024);
    expect(renderPrompt(inline[0]!.prompt, { body: '{"service":"billing","status":{"ok":true}}', hook: "deploys", delivery: "d1" })).toBe(
      'Deploy billing: {"ok":true} (deploys/d1)',
    );
    expect(renderPrompt("{{json.a}}|{{body}}", { body: "not json", hook: "h", delivery: "d" })).toBe("|not json");
    expect(renderPrompt("{{json.__proto__}}{{json.constructor}}", { body: "{}", hook: "h", delivery: "d" })).toBe("");
  });

  it.each([
    [{ deploys: { ...hook, secret: "short" } }, "secret must be"],
    [{ deploys: { ...hook, prompt: "{{env.HOME}}" } }, "unknown placeholder"],
    [{ deploys: { ...hook, conversation: { platform: "irc", chat: "x" } } }, "deploys.conversation"],
    [{ "Bad Name": hook }, "hook name"],
  ])("refuses a bad hook with one line that never shows its secret", (value, words) => {
    const e = fail({ HOOKS_CONFIG: JSON.stringify(value) });
    expect(e.variable).toBe("HOOKS_CONFIG");
    expect(e.message).toContain(words);
    expect(e.message).not.toContain("s".repeat(40));
  });

  it("refuses a missing file and bad JSON", () => {
    expect(fail({ HOOKS_CONFIG: "/nonexistent/hooks.json" }).message).toContain("cannot read the file");
    const bad = fail({ HOOKS_CONFIG: '{"deploys": {"secret": "do-not-show-this-secret-0123456789abcdef" oops}}' }).message;
    expect(bad).toContain("not valid JSON");
    expect(bad).not.toContain("do-not-show");
  });
});
