import { afterEach, describe, expect, it } from "vitest";
import { AdapterError, type AdapterSink } from "../../adapters/types.js";
import type { App } from "../../src/gateway/app.js";
import { OpenAPIHono } from "@hono/zod-openapi";
import { scheduleApi, type ScheduleEnv } from "../../src/gateway/jobs/api.js";
import { scheduleMessageTool } from "../../src/gateway/jobs/commands.js";
import { formatLocal } from "../../src/runtime/jobs/when.js";
import { MemoryAdapter } from "../support/memory-adapter.js";
import { eventually, startApp } from "../support/app.js";
import { capturedLogger } from "../reliability/helpers.js";

/** A platform whose sends can be refused per chat (a blocked bot, a deleted chat). */
class RefusingAdapter extends MemoryAdapter {
  refuse = new Set<string>();
  constructor() {
    super();
    const send = this.sink.send;
    this.sink = {
      ...this.sink,
      send: async (to, text, opts) => {
        if (this.refuse.has(to.chatId)) throw new AdapterError("telegram", "Rejected", "Forbidden: bot was blocked by the user");
        return send(to, text, opts);
      },
    } satisfies AdapterSink;
  }
}

let app: App | undefined;
afterEach(async () => {
  await app?.stop();
  app = undefined;
});

async function boot(start: Date, env: Record<string, string> = {}, lines?: string[]) {
  const clock = { now: start };
  const adapter = new RefusingAdapter();
  const echo = () => ({
    name: "echo",
    async *run(req: { messages: Array<{ role: string; content: string }> }) {
      const last = [...req.messages].reverse().find((m) => m.role === "user")?.content ?? "";
      yield { type: "done" as const, text: `echo: ${last}`, toolRounds: 0 };
    },
  });
  const booted = await startApp(
    "sqlite",
    [adapter],
    { ADMIN_USERS: "telegram:999", ...env },
    { jobClock: () => clock.now, agentFactory: echo as never, ...(lines && { log: capturedLogger(lines, "info") }) },
  );
  app = booted.app;
  const say = async (chat: string, text: string) => {
    const before = adapter.to(chat).length;
    await adapter.ctx.inbound(adapter.dm(chat, text));
    return (
      await eventually(
        () => adapter.to(chat),
        (s) => s.length > before,
        10_000,
        `a reply to ${text}`,
      )
    )
      .slice(before)
      .map((s) => s.text)
      .join("\n");
  };
  return { app: booted.app, adapter, clock, say };
}

/** Makes a job in chat 13 whose every send is refused, and runs it until its third failure pauses it. */
async function failUntilPaused(a: App, adapter: RefusingAdapter, clock: { now: Date }, t0: Date) {
  const target = await a.jobs.service.locate({ platform: "telegram", chat: "13" });
  const job = await a.jobs.service.create({
    target,
    timing: { kind: "every", spec: "60000", timezone: "UTC" },
    action: "text",
    text: "ping",
    createdBy: "test",
  });
  adapter.refuse.add("13");
  for (let i = 1; i <= 2; i++) {
    await advance(a, clock, new Date(t0.getTime() + i * 60_000), 60_000);
    const v = await eventually(
      () => a.jobs.service.get(job.id),
      (j) => j.failures === i,
      10_000,
      `failure ${i}`,
    );
    expect(v).toMatchObject({ status: "active", lastStatus: "failed", lastError: "Forbidden: bot was blocked by the user" });
  }
  await advance(a, clock, new Date(t0.getTime() + 3 * 60_000), 60_000);
  const paused = await eventually(
    () => a.jobs.service.get(job.id),
    (j) => j.status === "paused",
    10_000,
    "the pause",
  );
  expect(paused).toMatchObject({ failures: 3, lastStatus: "failed", lastError: "Forbidden: bot was blocked by the user" });
  return { job, paused };
}

/** Advances the job clock in steps, running a scheduler round at each (a fake clock: no wall-clock windows). */
async function advance(a: App, clock: { now: Date }, until: Date, stepMs: number): Promise<void> {
  while (clock.now.getTime() < until.getTime()) {
    clock.now = new Date(Math.min(until.getTime(), clock.now.getTime() + stepMs));
    await a.jobs.runner.tick();
  }
}

describe("scheduled jobs", () => {
  it("/remind, /schedule and /tz in chat: the reminder arrives once, is delivered with the platform's message id, and follows /new", async () => {
    const t0 = new Date("2027-01-04T12:00:00Z");
    const { app: a, adapter, clock, say } = await boot(t0);
    expect(await say("42", "/tz Mars/Olympus")).toContain('Unknown time zone "Mars/Olympus"');
    expect(await say("42", "/tz Europe/Paris")).toContain("Time zone set to Europe/Paris");
    expect(await say("42", "/remind tomorrow 25:00 nope")).toContain("is not a time of day");
    expect(await say("42", "/remind in 10m stretch your legs")).toContain("Scheduled (1)");
    expect(await say("42", "/remind at 18:00 dinner")).toContain("Scheduled (2)");
    const listed = await say("42", "/schedule");
    expect(listed).toContain("1. once at 2027-01-04 13:10 (Europe/Paris), active");
    expect(listed).toContain("2. once at 2027-01-04 18:00 (Europe/Paris), active");
    // /new before the run: the reminder goes to the chat and into the fresh session's transcript.
    expect(await say("42", "/new")).toContain("Started a fresh session");
    const current = await a.registry.resolveChatChannel({
      agentId: "777",
      userId: await a.gateway.deps.identities.userId("telegram", "42"),
      channel: "telegram:777:dm:42",
    });
    await advance(a, clock, new Date("2027-01-04T12:10:00Z"), 60_000);
    await eventually(
      () => adapter.to("42").filter((s) => s.text === "stretch your legs").length,
      (n) => n === 1,
      10_000,
      "the reminder",
    );
    await eventually(
      () => a.jobs.service.store.runCounts(),
      (c) => c.delivered === 1,
      10_000,
      "a delivered run",
    );
    const transcript = await a.runner.opts.transcript.recent(current.id, 50);
    expect(transcript.map((m) => [m.role, m.content])).toContainEqual(["assistant", "stretch your legs"]);
    // It ran once: more rounds send nothing more.
    await advance(a, clock, new Date("2027-01-04T12:30:00Z"), 60_000);
    expect(adapter.to("42").filter((s) => s.text === "stretch your legs")).toHaveLength(1);
    expect(await say("42", "/schedule cancel 1")).toContain("Cancelled 1: dinner");
    expect(await say("42", "/schedule cancel 1")).toContain("There is no scheduled job 1");
    expect(await say("42", "/schedule")).toContain("No scheduled messages");
    console.log(`jobs: ${JSON.stringify({ scenario: "chat-reminder", runs: await a.jobs.service.store.runCounts(), reminderShown: 1 })}`);
  });

  it("a cron job across the Europe/Paris daylight-saving changes runs at the right local times", async () => {
    const start = new Date("2027-03-25T22:00:00Z");
    const { app: a, clock, say } = await boot(start);
    await say("42", "hello");
    const target = await a.jobs.service.locate({ platform: "telegram", chat: "42" });
    const make = (spec: string, text: string) =>
      a.jobs.service.create({ target, timing: { kind: "cron", spec, timezone: "Europe/Paris" }, action: "text", text, createdBy: "test" });
    const nine = await make("0 9 * * *", "nine");
    const half2 = await make("30 2 * * *", "half past two");
    const dues = async (id: string) => (await a.jobs.service.store.runs(id, 50)).map((r) => [r.dueAt.toISOString(), r.status] as const).reverse();
    // Spring forward (2027-03-28 02:00 CET -> 03:00 CEST), five-minute steps of the job clock.
    await advance(a, clock, new Date("2027-03-30T12:00:00Z"), 5 * 60_000);
    await eventually(
      () => a.jobs.service.store.runCounts(),
      (c) => (c.delivered ?? 0) === 10,
      10_000,
      "ten delivered runs",
    );
    const springNine = await dues(nine.id);
    const springHalf2 = await dues(half2.id);
    // Autumn back (2027-10-31 03:00 CEST -> 02:00 CET): the clock jumps ahead; the runs missed meanwhile are skipped once.
    clock.now = new Date("2027-10-29T12:00:00Z");
    await a.jobs.runner.tick();
    const autumnFrom = (await dues(nine.id)).length;
    const autumnFromHalf = (await dues(half2.id)).length;
    await advance(a, clock, new Date("2027-11-01T12:00:00Z"), 5 * 60_000);
    await eventually(
      () => a.jobs.service.store.runCounts(),
      (c) => (c.delivered ?? 0) === 16,
      10_000,
      "sixteen delivered runs",
    );
    const autumnNine = (await dues(nine.id)).slice(autumnFrom);
    const autumnHalf2 = (await dues(half2.id)).slice(autumnFromHalf);
    const local = (rows: ReadonlyArray<readonly [string, string]>) => rows.map(([t, st]) => `${formatLocal(new Date(t), "Europe/Paris").slice(0, 16)} ${st}`);
    console.log(
      `jobs: ${JSON.stringify({ scenario: "dst-europe-paris", spring: { nine: local(springNine), half2: local(springHalf2) }, autumn: { nine: local(autumnNine), half2: local(autumnHalf2) } })}`,
    );
    expect(springNine).toEqual([
      ["2027-03-26T08:00:00.000Z", "delivered"],
      ["2027-03-27T08:00:00.000Z", "delivered"],
      ["2027-03-28T07:00:00.000Z", "delivered"],
      ["2027-03-29T07:00:00.000Z", "delivered"],
      ["2027-03-30T07:00:00.000Z", "delivered"],
    ]);
    // 02:30 does not exist on the 28th: it runs at the first valid minute after the gap (03:00 CEST).
    expect(springHalf2).toEqual([
      ["2027-03-26T01:30:00.000Z", "delivered"],
      ["2027-03-27T01:30:00.000Z", "delivered"],
      ["2027-03-28T01:00:00.000Z", "delivered"],
      ["2027-03-29T00:30:00.000Z", "delivered"],
      ["2027-03-30T00:30:00.000Z", "delivered"],
    ]);
    expect(autumnNine).toEqual([
      ["2027-10-30T07:00:00.000Z", "delivered"],
      ["2027-10-31T08:00:00.000Z", "delivered"],
      ["2027-11-01T08:00:00.000Z", "delivered"],
    ]);
    // 02:30 happens twice on the 31st: it runs once, at the first.
    expect(autumnHalf2).toEqual([
      ["2027-10-30T00:30:00.000Z", "delivered"],
      ["2027-10-31T00:30:00.000Z", "delivered"],
      ["2027-11-01T01:30:00.000Z", "delivered"],
    ]);
    // The clock's jump from March to October: one missed run per job, recorded, never sent late.
    const missed = (await a.jobs.service.store.runCounts()).missed;
    expect(missed).toBe(2);
  });

  it("a job whose platform call fails shows failed with the reason, and pauses after 3 failures with one operator alert", async () => {
    const lines: string[] = [];
    const t0 = new Date("2027-01-04T12:00:00Z");
    const { app: a, adapter, clock, say } = await boot(t0, {}, lines);
    await say("13", "hello");
    await say("999", "hello"); // the operator's DM: Telegram writes to a user by id
    const { job, paused } = await failUntilPaused(a, adapter, clock, t0);
    const alerts = () => adapter.to("999").filter((s) => s.text.includes(`Scheduled job ${job.id} failed 3 times in a row and is paused`));
    await eventually(alerts, (x) => x.length === 1, 10_000, "the operator's DM");
    // Paused: later rounds run nothing and alert nobody again.
    await advance(a, clock, new Date(t0.getTime() + 10 * 60_000), 60_000);
    await a.jobs.runner.tick();
    const runs = await a.jobs.service.store.runs(job.id);
    expect(runs.map((r) => [r.status, r.error])).toEqual(Array.from({ length: 3 }, () => ["failed", "Forbidden: bot was blocked by the user"]));
    expect(alerts()).toHaveLength(1);
    const alertLines = lines.filter((l) => l.includes("failed 3 times in a row and was paused"));
    expect(alertLines).toHaveLength(1);
    expect(await say("13x", "/schedule")).toContain("No scheduled messages"); // another chat sees none of it
    adapter.refuse.delete("13");
    const shown = await say("13", "/schedule");
    expect(shown).toContain("paused");
    expect(shown).toContain("failed (Forbidden: bot was blocked by the user)");
    const metrics = await a.metrics.text();
    expect(metrics).toMatch(/switchboard_job_runs_total\{status="failed"\} 3/);
    console.log(
      `jobs: ${JSON.stringify({ scenario: "failing-job", runs: runs.length, failed: runs.filter((r) => r.status === "failed").length, status: paused.status, operatorDms: alerts().length, alertLogLines: alertLines.length })}`,
    );
  });

  it("an operator on a platform whose bot cannot DM by user id (the adapter's facts say so) is not DMed about a paused job: a warning says why", async () => {
    const lines: string[] = [];
    const t0 = new Date("2027-01-04T12:00:00Z");
    const { app: a, adapter, clock, say } = await boot(t0, {}, lines);
    adapter.facts = { dmByUserId: false };
    await say("13", "hello");
    await say("999", "hello");
    const before = adapter.to("999").length;
    await failUntilPaused(a, adapter, clock, t0);
    await eventually(
      () => lines.filter((l) => l.includes("cannot DM this operator about a paused job")),
      (x) => x.length === 1,
      10_000,
      "the warning",
    );
    expect(lines.filter((l) => l.includes("failed 3 times in a row and was paused"))).toHaveLength(1);
    expect(adapter.to("999")).toHaveLength(before);
  });

  it("a job for a platform this process has no adapter for fails with that reason, not silently", async () => {
    const t0 = new Date("2027-01-04T12:00:00Z");
    const { app: a, clock } = await boot(t0);
    const target = {
      conversation: { agentId: "nobot", userId: "u1", channel: "discord:nobot:dm:1" },
      address: { platform: "discord", botId: "nobot", chatId: "1" },
    };
    const job = await a.jobs.service.create({
      target,
      timing: { kind: "once", spec: "2027-01-04T12:01:00Z", timezone: "UTC" },
      action: "text",
      text: "x",
      createdBy: "test",
    });
    await advance(a, clock, new Date("2027-01-04T12:01:00Z"), 60_000);
    expect(await a.jobs.service.get(job.id)).toMatchObject({ status: "done", lastStatus: "failed", lastError: "no discord adapter for bot nobot is running" });
  });

  it("an agent-prompt job runs in its own scheduler session linked to the conversation; its answer is the bot's message there", async () => {
    const t0 = new Date("2027-01-04T12:00:00Z");
    const { app: a, adapter, clock, say } = await boot(t0);
    await say("42", "hello");
    const target = await a.jobs.service.locate({ platform: "telegram", chat: "42" });
    const job = await a.jobs.service.create({
      target,
      timing: { kind: "once", spec: "2027-01-04T12:05:00Z", timezone: "UTC" },
      action: "agent",
      text: "summarize the news",
      createdBy: "test",
    });
    await advance(a, clock, new Date("2027-01-04T12:05:00Z"), 60_000);
    await eventually(
      () => adapter.to("42").filter((s) => s.text === "echo: summarize the news"),
      (x) => x.length === 1,
      10_000,
      "the agent's answer",
    );
    const stored = await a.jobs.service.store.get(job.id);
    const scheduler = await a.registry.getUnscoped(stored!.sessionId!);
    const conversation = await a.registry.resolveChatChannel(target.conversation);
    expect(scheduler).toMatchObject({ kind: "scheduler", parentId: conversation.id });
    expect((await a.runner.opts.transcript.recent(scheduler.id, 10)).map((m) => m.role)).toEqual(["user", "assistant"]);
    expect((await a.runner.opts.transcript.recent(conversation.id, 10)).map((m) => [m.role, m.content])).toContainEqual([
      "assistant",
      "echo: summarize the news",
    ]);
    await eventually(
      () => a.jobs.service.get(job.id),
      (j) => j.status === "done" && j.lastStatus === "delivered",
      10_000,
      "done",
    );
  });

  it("a due time claimed by a process that died is run once more, then given up; one missed beyond the grace is skipped and recorded", async () => {
    const t0 = new Date("2027-01-04T12:00:00Z");
    const { app: a, adapter, clock, say } = await boot(t0);
    await say("42", "hello");
    const target = await a.jobs.service.locate({ platform: "telegram", chat: "42" });
    const store = a.jobs.service.store;
    const crashy = await a.jobs.service.create({
      target,
      timing: { kind: "once", spec: "2027-01-04T12:01:00Z", timezone: "UTC" },
      action: "text",
      text: "after a crash",
      createdBy: "test",
    });
    clock.now = new Date("2027-01-04T12:01:00Z");
    // A process that died mid-run: it claimed the due time (claimed before this process started) and wrote nothing.
    const longAgo = new Date(Date.now() - 3_600_000);
    expect(await store.claimDue("dead-1", clock.now, longAgo, 10)).toHaveLength(1);
    await store.db.exec("test-age-claim", store.db.q.updateTable("ScheduledJob").set({ claimedAt: longAgo }).where("id", "=", crashy.id));
    await a.jobs.runner.tick();
    await eventually(
      () => adapter.to("42").filter((s) => s.text === "after a crash"),
      (x) => x.length === 1,
      10_000,
      "the retried run",
    );
    // Twice dead: the third claim gives the due time up as failed.
    const twice = await a.jobs.service.create({
      target,
      timing: { kind: "once", spec: "2027-01-04T12:02:00Z", timezone: "UTC" },
      action: "text",
      text: "never",
      createdBy: "test",
    });
    clock.now = new Date("2027-01-04T12:02:00Z");
    for (const owner of ["dead-1", "dead-2"]) {
      expect(await store.claimDue(owner, clock.now, new Date(Date.now() + 1000), 10)).toHaveLength(1);
      await store.db.exec("test-age-claim", store.db.q.updateTable("ScheduledJob").set({ claimedAt: longAgo }).where("id", "=", twice.id));
    }
    await a.jobs.runner.tick();
    expect(await a.jobs.service.get(twice.id)).toMatchObject({
      status: "done",
      lastStatus: "failed",
      lastError: "the gateway stopped twice while running it (it was tried twice)",
    });
    // Missed by more than SCHEDULE_MISFIRE_GRACE (10m): recorded missed, not sent.
    const late = await a.jobs.service.create({
      target,
      timing: { kind: "every", spec: String(3_600_000), timezone: "UTC" },
      action: "text",
      text: "hourly",
      createdBy: "test",
    });
    clock.now = new Date(new Date(late.nextRunAt!).getTime() + 11 * 60_000);
    await a.jobs.runner.tick();
    const v = await a.jobs.service.get(late.id);
    expect(v).toMatchObject({ status: "active", lastStatus: "missed" });
    expect(new Date(v.nextRunAt!).getTime()).toBe(new Date(late.nextRunAt!).getTime() + 3_600_000);
    expect(adapter.to("42").filter((s) => s.text === "hourly")).toHaveLength(0);
    expect(adapter.to("42").filter((s) => s.text === "never")).toHaveLength(0);
  });
});

describe("the schedule_message tool", () => {
  it("asks by default, schedules into the conversation it is called from, and answers bad calls in words", async () => {
    const { app: a, clock, adapter, say } = await boot(new Date("2027-01-04T12:00:00Z"));
    await say("42", "hello");
    const session = await a.registry.resolveChatChannel({
      agentId: "777",
      userId: await a.gateway.deps.identities.userId("telegram", "42"),
      channel: "telegram:777:dm:42",
    });
    const tool = scheduleMessageTool(a.jobs.service, session);
    expect(tool.policy).toBe("ask");
    const signal = new AbortController().signal;
    expect(await tool.run({ when: "in 5m", text: "tea is ready" }, { signal })).toMatch(/^scheduled [0-9a-f-]{36}: once at 2027-01-04 12:05 \(UTC\)/);
    expect(await tool.run({ when: "someday", text: "x" }, { signal })).toMatch(/^error: Say when/);
    expect(await tool.run({ when: "in 5m" }, { signal })).toMatch(/^error: invalid arguments for schedule_message: text/);
    expect(await tool.run({ when: "in 5m tomorrow", text: "x" }, { signal })).toMatch(/^error: could not read/);
    await advance(a, clock, new Date("2027-01-04T12:05:00Z"), 60_000);
    await eventually(
      () => adapter.to("42").filter((m) => m.text === "tea is ready"),
      (x) => x.length === 1,
      10_000,
      "the scheduled message",
    );
  });
});

describe("the /api/v1/schedules sub-app", () => {
  it("creates, lists, shows and cancels jobs; bad bodies get one clear 400", async () => {
    const { app: a, say } = await boot(new Date("2027-01-04T12:00:00Z"));
    await say("42", "hello");
    // Behind the API server a caller is always set; here the operator (every scope), as ApiServer's authentication would set it.
    const api = new OpenAPIHono<ScheduleEnv>();
    api.use("*", async (c, next) => {
      c.set("principal", { name: "operator", scopes: new Set(["schedule", "admin"]) });
      await next();
    });
    api.route("/", scheduleApi(a.jobs.service));
    const post = (body: unknown) => api.request("/", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const made = await post({ conversation: { platform: "telegram", chat: "42" }, cron: "0 9 * * 1-5", timezone: "Europe/Paris", text: "standup" });
    expect(made.status).toBe(201);
    const job = (await made.json()) as { id: string; nextRunAt: string; status: string };
    expect(job.status).toBe("active");
    expect(formatLocal(new Date(job.nextRunAt), "Europe/Paris")).toBe("2027-01-05 09:00 (Europe/Paris)");
    expect((await post({ conversation: { platform: "telegram", chat: "42" }, at: "2027-01-01T00:00:00Z", every: "1h", text: "x" })).status).toBe(400);
    const past = await post({ conversation: { platform: "telegram", chat: "42" }, at: "2020-01-01T00:00:00Z", text: "x" });
    expect(past.status).toBe(400);
    expect(((await past.json()) as { error: { message: string } }).error.message).toContain("in the past");
    expect((await post({ conversation: { platform: "telegram", chat: "nobody" }, every: "1h", text: "x" })).status).toBe(404);
    expect((await post({ conversation: { platform: "telegram", chat: "42" }, every: "10s", text: "x" })).status).toBe(400);
    expect((await post({ conversation: { platform: "telegram", chat: "42" }, cron: "61 * * * *", text: "x" })).status).toBe(400);
    const bad = await api.request("/", { method: "POST", headers: { "content-type": "application/json" }, body: "{not json" });
    expect(bad.status).toBe(400);
    const listed = (await (await api.request("/")).json()) as { schedules: Array<{ id: string }> };
    expect(listed.schedules.map((s) => s.id)).toEqual([job.id]);
    const shown = (await (await api.request(`/${job.id}`)).json()) as { runs: unknown[] };
    expect(shown.runs).toEqual([]);
    expect((await api.request(`/${job.id}`, { method: "DELETE" })).status).toBe(200);
    expect((await api.request(`/${job.id}`, { method: "DELETE" })).status).toBe(409);
    expect((await api.request("/nope", { method: "DELETE" })).status).toBe(404);
    expect(((await (await api.request("/")).json()) as { schedules: unknown[] }).schedules).toEqual([]);
    // Mounted without the API server's authentication, nobody is anyone: it fails closed, listing nothing.
    const bare = await scheduleApi(a.jobs.service).request("/");
    expect(bare.status).toBe(500);
    expect(await bare.text()).not.toContain("schedules");
    const doc = scheduleApi(a.jobs.service).getOpenAPIDocument({ openapi: "3.0.0", info: { title: "t", version: "1" } });
    expect(Object.keys(doc.paths ?? {})).toEqual(expect.arrayContaining(["/", "/{id}"]));
  });
});
