/**
 * A request the API refuses as invalid (400) names the field and what is wrong
 * there, through the real app and HTTP edge: a conversation that is neither a
 * chat nor a session names the closest shape's missing field, and a misspelt
 * field is named next to the one it was meant to be (src/validation-message.ts).
 */
import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { createApp, type App } from "../../src/gateway/app.js";
import { silentLogger } from "../../src/log.js";
import { freshDatabaseUrl } from "../support/db.js";
import { MemoryAdapter } from "../support/memory-adapter.js";

const OP = "operator-token-0123456789abcdef";
const apps: App[] = [];
afterEach(async () => {
  for (const a of apps.splice(0)) await a.stop();
});

describe("HTTP API v1: validation errors", () => {
  it("name the field and the fix, not zod's bare 'Invalid input'", async () => {
    const config = loadConfig({ DATABASE_URL: await freshDatabaseUrl("sqlite"), HTTP_PORT: "0", LOG_LEVEL: "silent", OPERATOR_TOKEN: OP });
    const app = await createApp(config, { log: silentLogger, adapters: () => [new MemoryAdapter()] });
    apps.push(app);
    const base = (await app.start()).replace("0.0.0.0", "127.0.0.1");
    const post = async (body: unknown) => {
      const res = await fetch(`${base}/api/v1/messages`, {
        method: "POST",
        headers: { authorization: `Bearer ${OP}`, "idempotency-key": `k-${Math.random()}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return { status: res.status, error: ((await res.json()) as { error: string }).error };
    };
    const typo = await post({ conversation: { platform: "telegram", chatt: "9" }, text: "hi" });
    expect(typo.status).toBe(400);
    expect(typo.error).toBe('invalid request: conversation.chat: is required (string); "chatt" is not a field here (a typo for it?)');
    const neither = await post({ conversation: {}, text: "hi" });
    expect(neither.error).toMatch(/^invalid request: conversation\.\w+: is required/);
    const extra = await post({ conversation: { platform: "telegram", chat: "9" }, text: "hi", mood: "happy" });
    expect(extra.error).toBe('invalid request: body: has unknown field "mood": remove or correct it');
  });
});
