/**
 * A turn abandoned by a stop mid-call (it commits nothing, so its event is
 * replayed at the next start): the abandoned call is still counted, the
 * replayed turn's call is counted as the second call it is, and nothing is
 * left reserved: on the same SQLite file across the restart.
 */
import { afterEach, beforeAll, expect, it } from "vitest";
import { whenTokenCounterLoaded } from "../../../src/agent/token-counter.js";
import type { App } from "../../../src/gateway/app.js";
import { periodOf } from "../../../src/gateway/usage/periods.js";
import { BudgetStore, UsageStore } from "../../../src/store/index.js";
import { FakeOpenAi, rawReply, sse } from "../../fakes/openai.js";
import { eventually } from "../../support/app.js";
import { startAppOn } from "../../support/app-on.js";
import { freshMigratedSqliteUrl } from "../../support/db.js";
import { MemoryAdapter } from "../../support/memory-adapter.js";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { streamed } from "./model-usage.js";

let app: App | undefined;
let fake: FakeOpenAi | undefined;
let dir: string | undefined;
// The abandoned call's row asserts the tokenizer's own count: before it has loaded, an estimate is a bound.
beforeAll(() => whenTokenCounterLoaded());
afterEach(async () => {
  await app?.stop();
  await fake?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  app = fake = dir = undefined;
});

it("a call abandoned by a stop mid-stream is counted; the replayed turn's call is counted once more; nothing stays reserved", async () => {
  fake = await FakeOpenAi.start();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "switchboard-usage-restart-"));
  const agents = path.join(dir, "agents.json");
  fs.writeFileSync(agents, JSON.stringify({ budgets: [{ per: "user", period: "day", tokens: 100_000 }] }));
  const url = await freshMigratedSqliteUrl();
  const env = {
    OPENAI_BASE_URL: fake.baseUrl,
    OPENAI_MODEL: "small-1",
    OPENAI_API_KEY: "sk-restart",
    AGENTS_CONFIG: agents,
    MODEL_MAX_OUTPUT_TOKENS: "50",
    REFLECT_EVERY_TURNS: "0",
  };
  // The first answer streams a little and then hangs; the replay's answer is whole.
  fake.enqueue(
    rawReply([sse.chunk({ role: "assistant", content: "" }), sse.chunk({ content: "half" }), { pause: 60_000 }]),
    streamed("done", { prompt: 70, completion: 2 }),
  );
  const first = new MemoryAdapter();
  app = (await startAppOn(url, [first], env, { streamAfterMs: 0 })).app;
  expect((await first.ctx.inbound(first.dm("51", "hello"))).status).toBe("accepted");
  await eventually(
    () => first.to("51").length,
    (n) => n > 0,
    10_000,
    "the draft of the first call",
  );
  // A stop with no grace abandons the running turn: nothing is committed, the event stays unhandled.
  await app.stop();
  app = undefined;
  const second = new MemoryAdapter();
  app = (await startAppOn(url, [second], env)).app;
  // The replayed turn's answer is edited into the abandoned turn's draft.
  await eventually(
    () => second.edits.map((m) => m.text),
    (t) => t.includes("done"),
    15_000,
    "the replayed answer",
  );
  const rows = await eventually(
    () => new UsageStore(app!.db).recent(10),
    (r) => r.length === 2,
    10_000,
    "both calls' rows",
  );
  const [replayed, abandoned] = [rows.find((r) => !r.estimated)!, rows.find((r) => r.estimated)!];
  expect(replayed).toMatchObject({ promptTokens: 70, completionTokens: 2 });
  expect(abandoned).toMatchObject({ kind: "turn", completionTokens: 1 });
  const store = new BudgetStore(app.db);
  expect(await store.openReservations()).toEqual([]);
  const [counter] = await store.counters([{ budget: "user/day/tokens", period: periodOf("day", "UTC", new Date()).key }]);
  expect(counter).toMatchObject({ spent: 72 + abandoned.promptTokens + 1, reserved: 0 });
});
