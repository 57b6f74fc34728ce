/**
 * `/model <a name the price table does not name>` under a cost budget, through the real gateway (SQLite file, the
 * fake model over loopback): the turn is refused before any request with the line that names the fix, nothing is
 * counted, and `/model` back onto a priced model answers again. (The escape itself:
 * test/probes/agent/cost-budget-model-switch.test.ts.)
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, expect, it } from "vitest";
import type { App } from "../../../src/gateway/app.js";
import { UsageStore } from "../../../src/store/index.js";
import { FakeOpenAi } from "../../fakes/openai.js";
import { eventually, startApp } from "../../support/app.js";
import { MemoryAdapter } from "../../support/memory-adapter.js";
import { streamed } from "./model-usage.js";

let app: App | undefined;
let fake: FakeOpenAi | undefined;
let dir: string | undefined;
afterEach(async () => {
  await app?.stop();
  await fake?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  app = fake = dir = undefined;
});

it("a turn on an unpriced model is refused under a cost budget with a line naming the fix; a priced model answers", async () => {
  fake = await FakeOpenAi.start();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "switchboard-unpriced-"));
  const agents = path.join(dir, "agents.json");
  const budgets = [{ per: "user", period: "day", cost: 1, contact: "#ai-budget" }];
  fs.writeFileSync(agents, JSON.stringify({ prices: { "small-1": { input: 1, output: 1 } }, budgets }));
  const adapter = new MemoryAdapter();
  const s = await startApp(
    "sqlite",
    [adapter],
    { OPENAI_BASE_URL: fake.baseUrl, OPENAI_MODEL: "small-1", OPENAI_API_KEY: "sk-unpriced", AGENTS_CONFIG: agents, REFLECT_EVERY_TURNS: "0" },
    {},
  );
  app = s.app;
  fake.responder = () => streamed("ok", { prompt: 100, completion: 5 });
  const say = async (text: string) => expect((await adapter.ctx.inbound(adapter.dm("62", text))).status).toBe("accepted");
  const replies = (n: number) =>
    eventually(
      () => adapter.to("62").map((m) => m.text),
      (t) => t.length >= n,
      20_000,
      `${n} replies`,
    );
  await say("/model big-1");
  await replies(1);
  await say("hello");
  const refused = (await replies(2))[1]!;
  expect(refused).toContain('The model "big-1" has no price, so your daily cost budget (1.00) cannot count it, and nothing was sent to it.');
  expect(refused).toContain('ask #ai-budget to add "big-1" to prices in AGENTS_CONFIG');
  expect(fake.requests).toHaveLength(0);
  await say("/model small-1");
  await replies(3);
  await say("again");
  expect((await replies(4))[3]).toBe("ok");
  expect(fake.requests.map((r) => r.body.model)).toEqual(["small-1"]);
  const rows = await eventually(
    () => new UsageStore(s.app.db).recent(10),
    (r) => r.length >= 1,
    10_000,
    "the row",
  );
  expect(rows.map((r) => [r.model, r.costMicros, r.priced])).toEqual([["small-1", 105, true]]);
});
