/**
 * Probe: a cost budget holds (README, Usage and budgets). A user must not
 * escape it by `/model <another name>` (open to everyone unless
 * ADMIN_COMMANDS or MODELS_ALLOWED say otherwise, as in the README's worked
 * example): a model the price table does not name is reserved and charged 0,
 * so no cost budget ever fills, however much the provider bills. Real
 * gateway, SQLite file, the fake model over loopback.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeAll, expect, it } from "vitest";
import { whenTokenCounterLoaded } from "../../../src/agent/token-counter.js";
import type { App } from "../../../src/gateway/app.js";
import { FakeOpenAi } from "../../fakes/openai.js";
import { eventually, startApp } from "../../support/app.js";
import { MemoryAdapter } from "../../support/memory-adapter.js";
import { streamed } from "../../gateway/usage/model-usage.js";

let app: App | undefined;
let fake: FakeOpenAi | undefined;
let dir: string | undefined;
beforeAll(() => whenTokenCounterLoaded());
afterEach(async () => {
  await app?.stop();
  await fake?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  app = fake = dir = undefined;
});

it("a global cost budget still limits a session that /model moved onto a model the price table does not name", async () => {
  fake = await FakeOpenAi.start();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "switchboard-probe-cost-"));
  const agents = path.join(dir, "agents.json");
  // 1,000 tokens at 1 per million cost 0.001: the first turn uses the budget up.
  fs.writeFileSync(agents, JSON.stringify({ prices: { "small-1": { input: 1, output: 1 } }, budgets: [{ per: "global", period: "month", cost: 0.001 }] }));
  const adapter = new MemoryAdapter();
  const s = await startApp(
    "sqlite",
    [adapter],
    {
      OPENAI_BASE_URL: fake.baseUrl,
      OPENAI_MODEL: "small-1",
      OPENAI_API_KEY: "sk-probe",
      AGENTS_CONFIG: agents,
      REFLECT_EVERY_TURNS: "0",
      MODEL_MAX_OUTPUT_TOKENS: "50",
    },
    {},
  );
  app = s.app;
  fake.responder = () => streamed("ok", { prompt: 1_500, completion: 10 });
  const say = async (text: string) => expect((await adapter.ctx.inbound(adapter.dm("61", text))).status).toBe("accepted");
  const replies = (n: number) =>
    eventually(
      () => adapter.to("61").map((m) => m.text),
      (t) => t.length >= n,
      20_000,
      `${n} replies`,
    );
  // Before anything is spent: the user moves the session onto a model the price table does not name.
  await say("/model big-1");
  await replies(1);
  for (const [i, text] of ["one", "two", "three"].entries()) {
    await say(text);
    await replies(i + 2);
  }
  // Each call used 1,510 tokens, above the whole budget at any listed price: at most the first may go through
  // (a budget never exceeds its limit by more than one call); whatever the fix, not all three.
  const toBig = fake.requests.filter((r) => r.body.model === "big-1");
  expect(toBig.length).toBeLessThanOrEqual(1);
});
