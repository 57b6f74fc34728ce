/**
 * The schedules API as other callers meet it, over real HTTP through the
 * whole app (issue 26, item 6): a token sees and cancels only the jobs it
 * made, unless it holds the admin scope; another token's job, and a job made
 * in chat, answer exactly as a missing one does (404, no existence oracle).
 * And a Slack channel is found by its channel id alone, through the Slack
 * adapter's real ids against the Slack fake, for messages and for jobs.
 */
import { afterEach, describe, expect, it } from "vitest";
import { chatExternalId } from "../../adapters/slack/ids.js";
import { SlackAdapter } from "../../adapters/slack/index.js";
import { FakeSlack } from "../fakes/slack.js";
import { eventually, startApp } from "../support/app.js";
import { MemoryAdapter } from "../support/memory-adapter.js";
import { checkedApi } from "../support/openapi-check.js";

const OP = "operator-token-for-schedules-0123456789";
const ALPHA = "a".repeat(40);
const BETA = "b".repeat(40);
const CAROL = "c".repeat(40);
const DANA = "d".repeat(40);
const CI = "e".repeat(40);
const TOKENS = `alpha:schedule:${ALPHA},beta:schedule+read:${BETA},carol:schedule+admin:${CAROL},dana:read+admin:${DANA},ci:send+read:${CI}`;

// Every answer below is checked against the served OpenAPI document after the file.
const api = checkedApi(OP, "api-schedules");

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function call(base: string, path: string, token: string, o: { method?: string; body?: unknown; key?: string } = {}) {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (o.body !== undefined) headers["content-type"] = "application/json";
  if (o.key) headers["idempotency-key"] = o.key;
  const res = await api.fetch(`${base}${path}`, {
    method: o.method ?? (o.body === undefined ? "GET" : "POST"),
    headers,
    body: o.body === undefined ? undefined : JSON.stringify(o.body),
  });
  return { status: res.status, json: (await res.json().catch(() => null)) as Record<string, any> | null };
}

async function boot(adapters: Array<MemoryAdapter | SlackAdapter>, env: Record<string, string> = {}, jobClock?: () => Date) {
  const { app, url } = await startApp("sqlite", adapters, { OPERATOR_TOKEN: OP, API_TOKENS: TOKENS, ...env }, jobClock ? { jobClock } : {});
  cleanups.push(() => app.stop());
  return { app, base: url.replace("0.0.0.0", "127.0.0.1") };
}

describe("GET/DELETE /api/v1/schedules: each token sees only its own jobs, unless it holds admin", () => {
  it("token A's job is unknown to token B; a chat's job is unknown to A; admin sees and cancels both", async () => {
    const adapter = new MemoryAdapter();
    const { app, base } = await boot([adapter]);
    await adapter.ctx.inbound(adapter.dm("42", "/remind in 1h tea"));
    await eventually(
      () => adapter.to("42").map((s) => s.text),
      (t) => t.some((x) => x.includes("Scheduled (1)")),
      10_000,
      "the chat's reminder",
    );
    const [chatJob] = await app.jobs.service.list();
    expect(chatJob!.createdBy).toMatch(/^chat:telegram:/);

    const made = await call(base, "/api/v1/schedules", ALPHA, { body: { conversation: { platform: "telegram", chat: "42" }, every: "1h", text: "stand up" } });
    expect(made.status).toBe(201);
    const mine = made.json!.id as string;
    expect(made.json!.createdBy).toBe("api:alpha");

    const ids = async (token: string, q = "") => ((await call(base, `/api/v1/schedules${q}`, token)).json!.schedules as Array<{ id: string }>).map((j) => j.id);
    expect(await ids(ALPHA)).toEqual([mine]);
    expect(await ids(ALPHA, "?all=true")).toEqual([mine]);
    expect(await ids(BETA)).toEqual([]);
    expect(await ids(BETA, "?all=true")).toEqual([]);
    expect((await ids(CAROL)).sort()).toEqual([chatJob!.id, mine].sort());
    expect((await ids(OP)).sort()).toEqual([chatJob!.id, mine].sort());

    // Another token's job and a job that never existed get the same answer, word for word (the id aside).
    const missing = "00000000-0000-4000-8000-000000000000";
    const unknown = await call(base, `/api/v1/schedules/${missing}`, BETA);
    const as = (r: { status: number; json: Record<string, any> | null }, id: string) => ({
      status: r.status,
      body: JSON.stringify(r.json).replaceAll(id, "<id>"),
    });
    for (const [token, id] of [
      [BETA, mine],
      [ALPHA, chatJob!.id],
    ] as const) {
      expect(as(await call(base, `/api/v1/schedules/${id}`, token), id)).toEqual(as(unknown, missing));
      expect(as(await call(base, `/api/v1/schedules/${id}`, token, { method: "DELETE" }), id)).toEqual(
        as(await call(base, `/api/v1/schedules/${missing}`, token, { method: "DELETE" }), missing),
      );
    }
    expect(unknown.status).toBe(404);
    // Nothing was cancelled by the refused calls.
    expect((await call(base, `/api/v1/schedules/${mine}`, ALPHA)).json!.status).toBe("active");
    expect((await app.jobs.service.get(chatJob!.id)).status).toBe("active");

    // Admin reads and cancels a chat's job; the maker cancels its own, once.
    expect((await call(base, `/api/v1/schedules/${chatJob!.id}`, CAROL)).status).toBe(200);
    expect((await call(base, `/api/v1/schedules/${chatJob!.id}`, CAROL, { method: "DELETE" })).json!.status).toBe("cancelled");
    expect((await call(base, `/api/v1/schedules/${mine}`, ALPHA, { method: "DELETE" })).json!.status).toBe("cancelled");
    expect((await call(base, `/api/v1/schedules/${mine}`, ALPHA, { method: "DELETE" })).status).toBe(409);
    expect(await ids(ALPHA)).toEqual([]);
    expect(await ids(ALPHA, "?all=true")).toEqual([mine]);
  });

  it("a delivery is seen by its sender and by a read+admin token, not by another reader", async () => {
    const adapter = new MemoryAdapter();
    const { base } = await boot([adapter]);
    await adapter.ctx.inbound(adapter.dm("9", "hello"));
    await eventually(
      () => adapter.to("9").length,
      (n) => n === 1,
      10_000,
      "the echo",
    );
    const sent = await call(base, "/api/v1/messages", CI, { body: { conversation: { platform: "telegram", chat: "9" }, text: "hi" }, key: "k1" });
    expect(sent.status).toBe(202);
    expect((await call(base, `/api/v1/deliveries/${sent.json!.id}`, CI)).status).toBe(200);
    expect((await call(base, `/api/v1/deliveries/${sent.json!.id}`, BETA)).status).toBe(404);
    expect((await call(base, `/api/v1/deliveries/${sent.json!.id}`, DANA)).status).toBe(200);
  });
});

describe("a Slack channel named by its channel id alone", () => {
  it("finds the channel (and a thread in it) for messages and jobs, and delivers there", async () => {
    const sl = new FakeSlack();
    await sl.start();
    cleanups.push(() => sl.close());
    const adapter = new SlackAdapter({ botToken: sl.botToken, signingSecret: sl.signingSecret, apiUrl: sl.apiUrl });
    const clock = { now: new Date() };
    const { app, base } = await boot([adapter], { GROUP_REQUIRE_MENTION: "false" }, () => clock.now);
    const channel = "C0DEPLOYS1";
    const events = `${base}/slack/events`;
    // A message in the channel, and a mention that the bot answers in a thread under it.
    expect((await sl.postEvent(events, sl.events.message({ channel, user: "U0PERSON1", text: "hello" }))).status).toBe(200);
    const mention = sl.events.appMention({ channel, user: "U0PERSON1", text: "a thread, please" });
    expect((await sl.postEvent(events, mention)).status).toBe(200);
    await eventually(
      () => sl.sent({ channel }).length,
      (n) => n >= 2,
      15_000,
      "two answers in the channel",
    );
    // The gateway keys the channel on the workspace (the adapter's external id); callers know the channel id.
    const rows = await app.db.query("t", app.db.q.selectFrom("ConversationAddress").select(["chatId", "threadId"]));
    expect(new Set(rows.map((r) => r.chatId))).toEqual(new Set([chatExternalId(sl.identity.teamId, channel)]));
    const thread = rows.find((r) => r.threadId !== "")!.threadId;

    const top = await call(base, "/api/v1/messages", CI, { body: { conversation: { platform: "slack", chat: channel }, text: "deploy finished" }, key: "s1" });
    expect(top.status).toBe(202);
    const inThread = await call(base, "/api/v1/messages", CI, {
      body: { conversation: { platform: "slack", chat: channel, thread }, text: "and in the thread" },
      key: "s2",
    });
    expect(inThread.status).toBe(202);
    for (const id of [top.json!.id, inThread.json!.id])
      await eventually(
        () => call(base, `/api/v1/deliveries/${id}`, CI),
        (r) => r.json?.status === "delivered",
        10_000,
        "delivered",
      );
    const posted = sl.sent({ channel });
    expect(posted.find((m) => m.text === "deploy finished")?.threadTs).toBeUndefined();
    expect(posted.find((m) => m.text === "and in the thread")?.threadTs).toBe(thread);

    // A job by the channel id: made, and run into the channel.
    const job = await call(base, "/api/v1/schedules", ALPHA, {
      body: { conversation: { platform: "slack", chat: channel }, at: new Date(clock.now.getTime() + 60_000).toISOString(), text: "standup" },
    });
    expect(job.status).toBe(201);
    expect(job.json!.conversation).toMatchObject({ platform: "slack", chat: channel });
    clock.now = new Date(clock.now.getTime() + 61_000);
    await app.jobs.runner.tick();
    await eventually(
      () => sl.sent({ channel }).filter((m) => m.text === "standup"),
      (m) => m.length === 1,
      10_000,
      "the job's message in the channel",
    );
    // A channel the bot was never talked to in stays unknown.
    const never = await call(base, "/api/v1/messages", CI, { body: { conversation: { platform: "slack", chat: "C0NEVER001" }, text: "x" }, key: "s3" });
    expect(never.status).toBe(404);
  });
});
