/**
 * What users see when the model fails: a short, friendly text with an error
 * reference. The model server's URL and its error body are operator
 * business: they go to the log, under the same reference, never to the chat.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { ConsoleAdapter } from "../../adapters/console/index.js";
import { loadConfig } from "../../src/config.js";
import { createApp, type App } from "../../src/gateway/app.js";
import { createLogger } from "../../src/log.js";
import { FakeOpenAi, statusReply } from "../fakes/openai.js";
import { eventually } from "../console/app.js";

const UPSTREAM_SECRET_TEXT = "internal-cluster gpu-pool-7 overloaded: quota exceeded for tenant acme";

let app: App | undefined;
let fake: FakeOpenAi | undefined;
let dir: string | undefined;
afterEach(async () => {
  await app?.stop();
  await fake?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  app = fake = dir = undefined;
});

describe("a failing model", () => {
  it.each([
    ["HTTP 500 with a body", () => statusReply(500, {}, JSON.stringify({ error: { message: UPSTREAM_SECRET_TEXT } }))],
    ["HTTP 400 with a body", () => statusReply(400, {}, JSON.stringify({ error: { message: UPSTREAM_SECRET_TEXT } }))],
    ["HTTP 404", () => statusReply(404, {}, UPSTREAM_SECRET_TEXT)],
  ])(
    "%s: the chat reply holds a reference and no URL or upstream text; the log holds both",
    async (_what, reply) => {
      fake = await FakeOpenAi.start();
      // Enough replies for the agent's retries.
      for (let i = 0; i < 10; i++) fake.enqueue(reply());
      dir = fs.mkdtempSync(path.join(os.tmpdir(), "switchboard-model-"));
      const lines: string[] = [];
      const log = createLogger({ level: "info", destination: new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString("utf8")), cb()) }) });
      const adapter = new ConsoleAdapter();
      app = await createApp(
        loadConfig({
          DATABASE_URL: `file:${path.join(dir, "x.db")}`,
          HTTP_PORT: "0",
          OPENAI_BASE_URL: fake.baseUrl,
          OPENAI_MODEL: "m",
          OPENAI_API_KEY: "sk-test-key-123",
          REFLECT_EVERY_TURNS: "0",
        }),
        { log, adapters: () => [adapter] },
      );
      const base = await app.start();
      const r = await fetch(`${base}/api/console/messages`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ chat: { type: "private" }, sender: { id: "alice", name: "Alice" }, text: "hello?" }),
      });
      expect(r.status).toBe(202);
      const text = await eventually(async () => adapter.history("dm:alice").find((m) => m.from === "bot")?.text, "the failure reply", 30_000);
      const ref = /\(ref ([0-9a-f]{6})\)/.exec(text)?.[1];
      const logged = lines.filter((l) => ref && l.includes(ref)).join("\n");
      console.log(`model failure (${_what}): chat saw ${JSON.stringify(text)}; log line ${logged.slice(0, 400)}`);
      expect(text).toMatch(/^Sorry, I couldn't answer that \(ref [0-9a-f]{6}\)\. Please try again\.$/);
      expect(text).not.toContain("127.0.0.1");
      expect(text).not.toContain("http");
      expect(text).not.toContain("gpu-pool");
      // The log has the same reference, with the URL and the upstream text.
      expect(logged).toContain("agent turn failed");
      expect(logged).toContain(new URL(fake.baseUrl).host);
      expect(logged).toContain("gpu-pool-7 overloaded");
      // and never the key
      expect(lines.join("")).not.toContain("sk-test-key-123");
    },
    60_000,
  );
});
