/**
 * Calls made without a message are charged where a chat turn there would be:
 * a scheduled agent job's turn, and reflection's review of a session, are
 * recorded in their chat (its platform, its chat id as messages name it, its
 * workspace), and that chat's and workspace's budgets limit them.
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
import { streamed } from "./model-usage.js";

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

async function start(budgets: object[], env: Record<string, string>, jobClock?: () => Date) {
  fake = await FakeOpenAi.start();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "switchboard-usage-place-"));
  const agents = path.join(dir, "agents.json");
  fs.writeFileSync(agents, JSON.stringify({ budgets }));
  const adapter = new MemoryAdapter();
  const s = await startApp(
    "sqlite",
    [adapter],
    {
      OPENAI_BASE_URL: fake.baseUrl,
      OPENAI_MODEL: "small-1",
      OPENAI_API_KEY: "sk-usage-place",
      AGENTS_CONFIG: agents,
      GROUP_POLICY: "open",
      MODEL_MAX_OUTPUT_TOKENS: "50",
      REFLECT_EVERY_TURNS: "0",
      ...env,
    },
    jobClock ? { jobClock } : {},
  );
  app = s.app;
  fake.responder = () => streamed("ok", { prompt: 150, completion: 10 });
  // A group whose chat id (as messages name it) is not its reply address's, like a Slack channel's "<team>/<channel>" beside "C…".
  const say = async (text: string, n: number) => {
    const env = adapter.group("T1/C1", "8", text, {
      mentioned: true,
      workspace: "T1",
      replyTo: { platform: "telegram", botId: adapter.botId, chatId: "C1" },
    });
    expect((await adapter.ctx.inbound(env)).status).toBe("accepted");
    return eventually(
      () => adapter.to("C1").map((m) => m.text),
      (t) => t.length >= n,
      20_000,
      `${n} replies in the group`,
    );
  };
  return { say, usage: new UsageStore(s.app.db) };
}

const placeOfRow = (r: { platform: string; chatId: string; workspaceId: string }) => `${r.platform}:${r.chatId}@${r.workspaceId}`;

it("a scheduled agent job in a group is recorded in the group's chat and workspace, and a used-up workspace budget refuses it", async () => {
  const clock = { now: new Date() };
  const t = await start([{ per: "workspace", period: "day", tokens: 300 }], {}, () => clock.now);
  await t.say("one", 1);
  const jobs = app!.jobs.service;
  const target = await jobs.locate({ platform: "telegram", chat: "C1" });
  const due = new Date(clock.now.getTime() + 5 * 60_000);
  const first = await jobs.create({
    target,
    timing: { kind: "once", spec: due.toISOString(), timezone: "UTC" },
    action: "agent",
    text: "news",
    createdBy: "agent",
  });
  clock.now = due;
  await app!.jobs.runner.tick();
  await eventually(
    () => jobs.get(first.id),
    (j) => j.status === "done",
    10_000,
    "the first job's run",
  );
  const rows = await eventually(
    () => t.usage.recent(10),
    (r) => r.length === 2,
    10_000,
    "the turn's and the job's rows",
  );
  expect(rows.map(placeOfRow)).toEqual(["telegram:T1/C1@T1", "telegram:T1/C1@T1"]);
  // The job stores no person who made it (the agent's tool made it): no user's budget is charged, the chat's and workspace's are.
  const [job, turn] = rows;
  expect(turn!.userId).not.toBe("");
  expect(job!.userId).toBe("");
  // 320 of the workspace's 300 tokens are spent: the next job there is refused before any request.
  const requests = fake!.requests.length;
  const later = new Date(due.getTime() + 5 * 60_000);
  const second = await jobs.create({
    target,
    timing: { kind: "once", spec: later.toISOString(), timezone: "UTC" },
    action: "agent",
    text: "more",
    createdBy: "agent",
  });
  clock.now = later;
  await app!.jobs.runner.tick();
  const run = await eventually(
    () => jobs.get(second.id),
    (j) => j.lastStatus === "failed" || j.status === "done",
    10_000,
    "the second job's run",
  );
  expect(run.lastError ?? "").toMatch(/^This workspace's daily token budget \(300 tokens\) is used up/);
  expect(fake!.requests).toHaveLength(requests);
});

it("reflection's review of a group session is recorded in the group's chat and counts against the chat's budget", async () => {
  const t = await start([{ per: "chat", period: "day", tokens: 300 }], { REFLECT_EVERY_TURNS: "1" });
  await t.say("remember that we meet on Tuesdays", 1);
  const rows = await eventually(
    () => t.usage.recent(10),
    (r) => r.length === 2,
    15_000,
    "the turn's and the review's rows",
  );
  const [review] = rows.filter((r) => r.kind === "reflection");
  const [turn] = rows.filter((r) => r.kind === "turn");
  expect(placeOfRow(review!)).toBe(placeOfRow(turn!));
  expect(review).toMatchObject({ platform: "telegram", chatId: "T1/C1", workspaceId: "T1", sessionId: turn!.sessionId, userId: "" });
  // The turn's 160 and the review's 160 are the chat's 320 of 300: the next turn there is refused before any request.
  const requests = fake!.requests.length;
  const texts = await t.say("and on Fridays", 2);
  expect(texts[1]).toMatch(/^This chat's daily token budget \(300 tokens\) is used up/);
  expect(fake!.requests).toHaveLength(requests);
});
