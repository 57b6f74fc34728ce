/**
 * Probe: a scheduled agent job's model calls are "counted, and limited, like
 * chat turns" (README, Usage and budgets). A chat turn in a chat is charged to
 * that chat's `per: "chat"` budget; the job's turn in the same chat must be
 * too, or a chat whose budget is used up keeps spending through its jobs.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeAll, expect, it } from "vitest";
import { whenTokenCounterLoaded } from "../../../src/agent/token-counter.js";
import type { App } from "../../../src/gateway/app.js";
import { UsageStore } from "../../../src/store/index.js";
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

it("a scheduled agent job's call is charged to its chat's budget and recorded in that chat: a used-up chat budget refuses the job", async () => {
  const clock = { now: new Date() };
  fake = await FakeOpenAi.start();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "switchboard-probe-jobbudget-"));
  const agents = path.join(dir, "agents.json");
  fs.writeFileSync(agents, JSON.stringify({ budgets: [{ per: "chat", period: "day", tokens: 300 }] }));
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
    { jobClock: () => clock.now },
  );
  app = s.app;
  const usage = new UsageStore(s.app.db);
  fake.responder = () => streamed("ok", { prompt: 150, completion: 10 });
  expect((await adapter.ctx.inbound(adapter.dm("53", "one"))).status).toBe("accepted");
  await eventually(
    () => adapter.to("53"),
    (m) => m.length >= 1,
    20_000,
    "the first reply",
  );
  const jobs = app.jobs.service;
  const target = await jobs.locate({ platform: "telegram", chat: "53" });
  const due = new Date(clock.now.getTime() + 5 * 60_000);
  const first = await jobs.create({
    target,
    timing: { kind: "once", spec: due.toISOString(), timezone: "UTC" },
    action: "agent",
    text: "news",
    createdBy: "test",
  });
  clock.now = due;
  await app.jobs.runner.tick();
  await eventually(
    () => jobs.get(first.id),
    (j) => j.status === "done",
    10_000,
    "the first job's run",
  );
  const rows = await eventually(
    () => usage.recent(10),
    (r) => r.length === 2,
    10_000,
    "both rows",
  );
  // 320 of the chat's 300 tokens are spent: the next job in this chat is refused before any request.
  const requests = fake.requests.length;
  const later = new Date(due.getTime() + 5 * 60_000);
  const second = await jobs.create({
    target,
    timing: { kind: "once", spec: later.toISOString(), timezone: "UTC" },
    action: "agent",
    text: "more",
    createdBy: "test",
  });
  clock.now = later;
  await app.jobs.runner.tick();
  const run = await eventually(
    () => jobs.get(second.id),
    (j) => j.lastStatus === "failed" || j.status === "done",
    10_000,
    "the second job's run",
  );
  expect(run.lastError ?? "").toMatch(/^This chat's daily token budget \(300 tokens\) is used up/);
  expect(fake.requests).toHaveLength(requests);
  // And the job's call is recorded in chat telegram:53, like the turn before it (/usage "this chat").
  expect(rows.map((r) => `${r.platform}:${r.chatId}`)).toEqual(["telegram:53", "telegram:53"]);
});
