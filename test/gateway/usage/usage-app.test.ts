/**
 * Usage and budgets through the real gateway (SQLite file, the OpenAI agent
 * against the fake model over loopback): every model call is a row with the
 * provider's usage (or a marked estimate), tool rounds are calls of their
 * own, a call whose turn fails is still counted, a used-up budget refuses
 * before any request with one line, and the store failing at the reserve or
 * the settle loses nothing and charges nothing twice.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { whenTokenCounterLoaded } from "../../../src/agent/token-counter.js";
import type { App } from "../../../src/gateway/app.js";
import { BudgetStore, UsageStore } from "../../../src/store/index.js";
import { FakeOpenAi, rawReply, sse, statusReply, toolUsingModel } from "../../fakes/openai.js";
import { eventually, startApp } from "../../support/app.js";
import { FaultPlan } from "../../support/faults.js";
import { MemoryAdapter } from "../../support/memory-adapter.js";
import { parsePrometheus } from "../../support/prometheus.js";
import { streamed, whole } from "./model-usage.js";

let app: App | undefined;
let fake: FakeOpenAi | undefined;
let dir: string | undefined;
// The rows below assert the tokenizer's own counts: before it has loaded, an estimate is the
// reservation's bound (test/agent/token-counter.test.ts).
beforeAll(() => whenTokenCounterLoaded());
afterEach(async () => {
  await app?.stop();
  await fake?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  app = fake = dir = undefined;
});

async function start(file: object, env: Record<string, string> = {}, faults?: FaultPlan, opts: { streamAfterMs?: number; jobClock?: () => Date } = {}) {
  fake = await FakeOpenAi.start();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "switchboard-usage-"));
  const agents = path.join(dir, "agents.json");
  fs.writeFileSync(agents, JSON.stringify(file));
  const adapter = new MemoryAdapter();
  const s = await startApp(
    "sqlite",
    [adapter],
    { OPENAI_BASE_URL: fake.baseUrl, OPENAI_MODEL: "small-1", OPENAI_API_KEY: "sk-usage-test", AGENTS_CONFIG: agents, REFLECT_EVERY_TURNS: "0", ...env },
    { ...opts, ...(faults && { faults }) },
  );
  app = s.app;
  const say = async (user: string, text: string) => expect((await adapter.ctx.inbound(adapter.dm(user, text))).status).toBe("accepted");
  const replies = (user: string, n: number) =>
    eventually(
      () => adapter.to(user).map((m) => m.text),
      (t) => t.length >= n,
      20_000,
      `${n} replies to ${user}`,
    );
  const metric = async (name: string, labels: Record<string, string>) =>
    parsePrometheus(await (await fetch(`${s.url}/metrics`)).text())
      .filter((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v))
      .reduce((a, x) => a + x.value, 0);
  return { adapter, say, replies, metric, usage: new UsageStore(s.app.db), budgets: new BudgetStore(s.app.db), url: s.url };
}

const PRICES = { prices: { "small-1": { input: 0.15, cachedInput: 0.03, output: 0.6 } } };

describe("usage rows", () => {
  it("streamed and whole answers: each call's row is the provider's usage (cached tokens too), priced, with its place; include_usage is asked", async () => {
    const t = await start(PRICES);
    fake!.enqueue(streamed("one", { prompt: 120, completion: 30, cached: 100 }), whole("two", { prompt: 200, completion: 7 }));
    await t.say("41", "first");
    await t.replies("41", 1);
    await t.say("41", "second");
    expect(await t.replies("41", 2)).toEqual(["one", "two"]);
    expect(fake!.requests[0]!.body.stream_options).toEqual({ include_usage: true });
    const rows = (await t.usage.recent(10)).reverse();
    expect(
      rows.map((r) => [r.kind, r.agent, r.model, r.promptTokens, r.completionTokens, r.cachedTokens, r.estimated, r.costMicros, r.platform, r.chatId]),
    ).toEqual([
      ["turn", "default", "small-1", 120, 30, 100, false, Math.round(20 * 0.15 + 100 * 0.03 + 30 * 0.6), "telegram", "41"],
      ["turn", "default", "small-1", 200, 7, 0, false, Math.round(200 * 0.15 + 7 * 0.6), "telegram", "41"],
    ]);
    expect(rows[0]!.userId).toMatch(/^[0-9a-f-]{36}$/);
    expect(rows[0]!.sessionId).toBe(rows[1]!.sessionId);
    expect(await t.metric("switchboard_model_tokens_total", { agent: "default", model: "small-1", type: "prompt" })).toBe(320);
    expect(await t.metric("switchboard_model_tokens_total", { type: "cached" })).toBe(100);
    expect(await t.metric("switchboard_model_cost_total", { agent: "default" })).toBeCloseTo((rows[0]!.costMicros + rows[1]!.costMicros) / 1e6, 9);
  });

  it("a provider that sends no usage: the row is a tokenizer estimate, marked estimated; a model with no price costs 0 and says so", async () => {
    const t = await start({});
    fake!.enqueue(streamed("a reply of a few words"));
    await t.say("42", "how many tokens is this?");
    await t.replies("42", 1);
    const [row] = await eventually(
      () => t.usage.recent(10),
      (r) => r.length === 1,
      10_000,
      "the row",
    );
    expect(row).toMatchObject({ estimated: true, priced: false, costMicros: 0 });
    expect(row!.promptTokens).toBeGreaterThan(5);
    // "a reply of a few words" in o200k_base.
    expect(row!.completionTokens).toBe(6);
  });

  it("reflection's review is a call counted for the session's agent and, in a private chat, its user", async () => {
    const t = await start({}, { REFLECT_EVERY_TURNS: "1" });
    fake!.responder = () => streamed("fact one", { prompt: 50, completion: 3 });
    await t.say("49", "remember that I like tea");
    await t.replies("49", 1);
    const rows = await eventually(
      () => t.usage.recent(10),
      (r) => r.length === 2,
      15_000,
      "the turn's and the review's rows",
    );
    const [review] = rows.filter((r) => r.kind === "reflection");
    const [turn] = rows.filter((r) => r.kind === "turn");
    expect(review).toMatchObject({ agent: "default", promptTokens: 50, completionTokens: 3, userId: turn!.userId, sessionId: turn!.sessionId });
  });

  it("each tool round is a call of its own (turn, then tool_round)", async () => {
    const t = await start({});
    fake!.responder = toolUsingModel({ trigger: "time", tool: "current_time" });
    await t.say("43", "what time is it");
    await t.replies("43", 1);
    const rows = await eventually(
      () => t.usage.recent(10),
      (r) => r.length === 2,
      10_000,
      "two rows",
    );
    expect(rows.map((r) => r.kind).sort()).toEqual(["tool_round", "turn"]);
  });

  it("a call whose turn fails after the server answered is still counted (by estimate); one that never reached it is not", async () => {
    const t = await start({}, { OPENAI_MAX_RETRIES: "0" });
    fake!.enqueue(rawReply([sse.chunk({ role: "assistant", content: "half an ans" })]), statusReply(400, {}, "{}"));
    fake!.requests.length = 0;
    await t.say("44", "this stream breaks");
    await t.replies("44", 1);
    await t.say("44", "this one is refused");
    await t.replies("44", 2);
    const rows = await t.usage.recent(10);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ estimated: true, completionTokens: 3 });
  });
});

describe("usage of turns that never answer", () => {
  it("/stop mid-stream: the call is counted by estimate (the server was answering) and its reservation released", async () => {
    // Drafts from the first delta on: the draft shows the client has read the text so far.
    const t = await start({ budgets: [{ per: "user", period: "day", tokens: 100_000 }] }, { MODEL_MAX_OUTPUT_TOKENS: "50" }, undefined, { streamAfterMs: 0 });
    fake!.enqueue(rawReply([sse.chunk({ role: "assistant", content: "" }), sse.chunk({ content: "a long answer that" }), { pause: 60_000 }]));
    await t.say("50", "tell me a long story");
    await fake!.waitForRequests(1);
    await eventually(
      () => t.adapter.edits.length + t.adapter.to("50").length,
      (n) => n > 0,
      10_000,
      "the draft",
    );
    await t.say("50", "/stop");
    const [row] = await eventually(
      () => t.usage.recent(10),
      (r) => r.length === 1,
      15_000,
      "the stopped call's row",
    );
    expect(row).toMatchObject({ kind: "turn", estimated: true, completionTokens: 4 });
    expect(await t.budgets.openReservations()).toEqual([]);
    const [counter] = await t.budgets.counters([{ budget: "user/day/tokens", period: new Date().toISOString().slice(0, 10) }]);
    expect(counter).toMatchObject({ spent: row!.promptTokens + 4, reserved: 0 });
  });
});

describe("budgets", () => {
  const budget = (tokens: number, extra: object = {}) => ({ budgets: [{ per: "user", period: "day", tokens, ...extra }] });

  it("a used-up daily budget refuses before the request with one line; the operator gets a metric; /usage and /budget show it", async () => {
    const t = await start(budget(300, { contact: "the ops channel" }), { MODEL_MAX_OUTPUT_TOKENS: "50", ADMIN_USERS: "telegram:99" });
    fake!.responder = () => streamed("ok", { prompt: 150, completion: 10 });
    await t.say("45", "one");
    await t.replies("45", 1);
    await t.say("45", "two");
    await t.replies("45", 2);
    await t.say("45", "three");
    const texts = await t.replies("45", 3);
    expect(fake!.requests).toHaveLength(2);
    expect(texts[2]).toMatch(
      /Your daily token budget \(300 tokens\) is used up; it resets at \d{4}-\d\d-\d\d 00:00 \(UTC\)\. Ask the ops channel to raise it\./,
    );
    expect(texts[2]).not.toContain("\n");
    expect(await t.metric("switchboard_budget_refusals_total", { budget: "user/day/tokens" })).toBe(1);
    // Another user has a budget of their own.
    await t.say("46", "hello");
    expect(await t.replies("46", 1)).toEqual(["ok"]);

    await t.say("45", "/usage");
    const usage = (await t.replies("45", 4))[3]!;
    expect(usage).toContain("This chat today: 320 tokens in 2 calls");
    expect(usage).toContain("You today: 320 tokens in 2 calls");
    // /budget is for admins: a user is refused, an admin sees the counters and resets one.
    await t.say("45", "/budget");
    expect((await t.replies("45", 5))[4]).toContain("/budget is for operators only.");
    await t.say("99", "/budget");
    const list = (await t.replies("99", 1))[0]!;
    expect(list).toMatch(/user\/day\/tokens \S+: 320 spent, 0 reserved of 300; resets/);
    await t.say("99", "/budget reset user/day/tokens");
    expect((await t.replies("99", 2))[1]).toContain("Reset user/day/tokens: 2 counters back to 0 spent.");
    await t.say("45", "four");
    expect((await t.replies("45", 6))[5]).toBe("ok");

    // The console's usage page reads the same through the operator API; a malformed query is a 400.
    const page = (await (await fetch(`${t.url}/api/usage?by=agent&since=today`)).json()) as { rows: unknown[] };
    expect(page.rows).toEqual([expect.objectContaining({ key: "default", calls: 4, promptTokens: 600, completionTokens: 40 })]);
    const { budgets } = (await (await fetch(`${t.url}/api/budgets`)).json()) as { budgets: Array<{ spent: number }> };
    expect(budgets.find((b) => b.spent === 160)).toMatchObject({ budget: "user/day/tokens", limit: 300, reserved: 0, unit: "tokens" });
    expect((await fetch(`${t.url}/api/usage?by=password`)).status).toBe(400);
    expect((await fetch(`${t.url}/api/usage?since=yesterday`)).status).toBe(400);
  });

  it("a scheduled agent job in a private chat counts against its user's budget; refused, its run's error is the budget line", async () => {
    const clock = { now: new Date() };
    const t = await start(budget(300), { MODEL_MAX_OUTPUT_TOKENS: "50" }, undefined, { jobClock: () => clock.now });
    fake!.responder = () => streamed("ok", { prompt: 150, completion: 10 });
    await t.say("52", "one");
    await t.replies("52", 1);
    const jobs = app!.jobs.service;
    const target = await jobs.locate({ platform: "telegram", chat: "52" });
    const due = new Date(clock.now.getTime() + 5 * 60_000);
    const first = await jobs.create({
      target,
      timing: { kind: "once", spec: due.toISOString(), timezone: "UTC" },
      action: "agent",
      text: "news",
      createdBy: "test",
    });
    clock.now = due;
    await app!.jobs.runner.tick();
    await eventually(
      () => jobs.get(first.id),
      (j) => j.status === "done",
      10_000,
      "the first job's run",
    );
    // The job's call was the user's second: 320 of 300 spent. The next job is refused before any request.
    const rows = await t.usage.recent(10);
    expect(rows.map((r) => r.userId)).toEqual([rows[0]!.userId, rows[0]!.userId]);
    const requests = fake!.requests.length;
    const later = new Date(due.getTime() + 5 * 60_000);
    const second = await jobs.create({
      target,
      timing: { kind: "once", spec: later.toISOString(), timezone: "UTC" },
      action: "agent",
      text: "more news",
      createdBy: "test",
    });
    clock.now = later;
    await app!.jobs.runner.tick();
    const refused = await eventually(
      () => jobs.get(second.id),
      (j) => j.lastStatus === "failed",
      10_000,
      "the refused run",
    );
    expect(refused.lastError).toMatch(/^Your daily token budget \(300 tokens\) is used up; it resets at/);
    expect(fake!.requests).toHaveLength(requests);
  });

  it("the store failing at the reserve: the turn fails with a clear line, no request is made, nothing is charged", async () => {
    const faults = new FaultPlan();
    const t = await start(budget(10_000), { MODEL_MAX_OUTPUT_TOKENS: "50" }, faults);
    fake!.responder = () => streamed("ok", { prompt: 100, completion: 5 });
    faults.once("budget-reserve", "SQLITE_IOERR");
    await t.say("47", "one");
    expect((await t.replies("47", 1))[0]).toContain("The usage budgets could not be checked (the database failed), so nothing was sent to the model.");
    expect(fake!.requests).toHaveLength(0);
    expect(await t.usage.recent(10)).toHaveLength(0);
    expect(await t.budgets.openReservations()).toEqual([]);
    await t.say("47", "two");
    expect((await t.replies("47", 2))[1]).toBe("ok");
  });

  it("the store failing at the settle: the answer stands, the settlement is retried, the call is counted once", async () => {
    const faults = new FaultPlan();
    const t = await start(budget(10_000), { MODEL_MAX_OUTPUT_TOKENS: "50" }, faults);
    fake!.responder = () => streamed("ok", { prompt: 100, completion: 5 });
    faults.once("budget-settle", "SQLITE_IOERR");
    await t.say("48", "one");
    expect(await t.replies("48", 1)).toEqual(["ok"]);
    const counters = await eventually(
      async () => (await t.budgets.counters([{ budget: "user/day/tokens", period: new Date().toISOString().slice(0, 10) }]))[0],
      (c) => c?.spent === 105,
      15_000,
      "the retried settlement",
    );
    expect(counters).toMatchObject({ spent: 105, reserved: 0 });
    expect(await t.usage.recent(10)).toHaveLength(1);
    expect(await t.budgets.openReservations()).toEqual([]);
    expect(faults.injected.get("budget-settle")).toBe(1);
    expect(await t.metric("switchboard_internal_errors_total", { where: "usage-settle" })).toBe(1);
  });
});
