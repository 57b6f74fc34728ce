/**
 * Budgets with several gateway processes on one PostgreSQL database (issue
 * 29, acceptances 4 and 5). The check and the charge are one transaction on
 * locked counter rows, so three processes answering one user's 200
 * concurrent messages never spend past the limit plus one call's maximum,
 * and every refused message gets the budget's line. A process killed
 * (SIGKILL) mid-call leaves its reservation held; once it expires, a
 * restarted process's sweep settles it at the reserved amount, and the budget adds up.
 */
import type { ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { promptBound } from "../../src/agent/token-estimate.js";
import { periodOf } from "../../src/gateway/usage/periods.js";
import { BudgetStore, openDatabase, UsageStore, type Database } from "../../src/store/index.js";
import { FakeOpenAi } from "../fakes/openai.js";
import { streamed } from "../gateway/usage/model-usage.js";
import { eventually } from "../support/app.js";
import { startGateway, startSharedCluster } from "../support/gateway-processes.js";
import type { LoopbackPlatform } from "../support/loopback-platform.js";

const MAX_OUTPUT = 50;
const LINE = /Your daily token budget \([\d,]+ tokens\) is used up; it resets at \d{4}-\d\d-\d\d 00:00 \(Europe\/Paris\)\. Ask an admin to raise it\./;

let children: ChildProcess[] = [];
let platform: LoopbackPlatform | undefined;
let fake: FakeOpenAi | undefined;
let db: Database | undefined;
let dir: string | undefined;
afterEach(async () => {
  for (const c of children) c.kill("SIGKILL");
  await platform?.close();
  await fake?.close();
  await db?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  children = [];
  platform = fake = db = dir = undefined;
});

async function cluster(tokens: number, extra: Record<string, string> = {}) {
  fake = await FakeOpenAi.start();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "switchboard-budgets-"));
  const agents = path.join(dir, "agents.json");
  fs.writeFileSync(agents, JSON.stringify({ budgets: [{ per: "user", period: "day", tokens }] }));
  const env = {
    OPENAI_BASE_URL: fake.baseUrl,
    OPENAI_MODEL: "small-1",
    OPENAI_API_KEY: "sk-budget-test",
    OPENAI_MAX_RETRIES: "0",
    MODEL_MAX_OUTPUT_TOKENS: String(MAX_OUTPUT),
    AGENTS_CONFIG: agents,
    DEFAULT_TIMEZONE: "Europe/Paris",
    REFLECT_EVERY_TURNS: "0",
    ...extra,
  };
  const c = await startSharedCluster(env);
  platform = c.platform;
  children = c.gateways.map((g) => g.child);
  db = await openDatabase({ url: c.dbUrl });
  // What a further process joining the cluster is started with (startSharedCluster's environment).
  const join = () =>
    startGateway({
      DATABASE_URL: c.dbUrl,
      HTTP_PORT: "0",
      DM_POLICY: "open",
      SHARED_DATABASE: "true",
      LOOPBACK_URL: c.platform.url,
      LOOPBACK_MODE: "webhook",
      LOG_LEVEL: "warn",
      ...env,
    });
  return { ...c, join };
}

const post = (proxy: string, chatId: string, text: string, messageId: string) =>
  fetch(`${proxy}/loopback/update`, { method: "POST", body: JSON.stringify({ id: 0, chatId, senderId: "u1", text, messageId, date: Date.now() }) });

describe("budgets across processes on one PostgreSQL", () => {
  it("acceptance 4: 200 concurrent messages of one user on three processes never spend past N plus one call's maximum; every refusal got the line", async () => {
    const N = 20_000;
    const { proxy } = await cluster(N);
    // Each call reports the most it may use, exactly what it reserved (its prompt's bound plus the 50 output
    // tokens): the worst case for the limit, where nothing a reservation held is given back.
    fake!.responder = (body) => streamed("ok", { prompt: promptBound(body.messages, body.tools), completion: MAX_OUTPUT });
    const CHATS = 20;
    const PER_CHAT = 10;
    const started = Date.now();
    await Promise.all(
      Array.from({ length: CHATS }, (_, c) =>
        Promise.all(Array.from({ length: PER_CHAT }, async (_, i) => expect((await post(proxy.url, `c${c}`, `message ${c}-${i}`, `m${i}`)).status).toBe(200))),
      ),
    );
    await eventually(
      () => platform!.messages.length,
      (n) => n >= CHATS * PER_CHAT,
      90_000,
      "an answer to every message",
    );
    const texts = platform!.messages.map((m) => m.text);
    const answered = texts.filter((t) => t === "ok").length;
    const refused = texts.filter((t) => LINE.test(t)).length;
    expect(answered + refused).toBe(CHATS * PER_CHAT);
    expect(refused).toBeGreaterThan(0);
    // No request was made for a refused message.
    expect(fake!.requests).toHaveLength(answered);
    const rows = await new UsageStore(db!).recent(1000);
    const spent = rows.reduce((a, r) => a + r.promptTokens + r.completionTokens, 0);
    let maxCall = 0;
    for (const r of fake!.requests) maxCall = Math.max(maxCall, promptBound(r.body.messages, r.body.tools) + MAX_OUTPUT);
    const period = periodOf("day", "Europe/Paris", new Date()).key;
    const [counter] = await eventually(
      () => new BudgetStore(db!).counters([{ budget: "user/day/tokens", period }]),
      (c) => c[0]?.reserved === 0,
      30_000,
      "every reservation settled",
    );
    console.log(
      `[budgets] 3 processes, ${CHATS * PER_CHAT} messages in ${Date.now() - started} ms: ${answered} answered, ${refused} refused; spent ${spent} of N=${N} (bound ${N + maxCall}, one call's maximum ${maxCall})`,
    );
    expect(counter!.spent).toBe(spent);
    expect(spent).toBeLessThanOrEqual(N + maxCall);
    // (It may end below N: a call is refused while others' reservations, which settle lower, hold the rest.)
    expect(spent).toBeGreaterThan(0);
  });

  it("acceptance 5: a process killed mid-call holds its reservation until it expires; a restarted process's sweep settles it at the reserved amount", async () => {
    // AGENT_TIMEOUT 3 s: a reservation is held 6 s (the timeout plus as much again, at most 30 s).
    const { proxy, join } = await cluster(100_000, { AGENT_TIMEOUT: "3s" });
    let hung = false;
    // The first request hangs (the process is killed while it waits); the rest answer.
    fake!.responder = () => {
      if (!hung) {
        hung = true;
        return { headers: { "content-type": "text/event-stream" }, body: [], hang: true };
      }
      return streamed("ok", { prompt: 10, completion: 40 });
    };
    expect((await post(proxy.url, "crash", "hello", "m1")).status).toBe(200);
    await fake!.waitForRequests(1);
    const store = new BudgetStore(db!);
    const [held] = await eventually(
      () => store.openReservations(),
      (r) => r.length === 1,
      10_000,
      "the reservation",
    );
    // Whichever process holds the call (in shared mode the one that takes the conversation's lease): kill them all.
    await Promise.all(
      children.map((c) => {
        const exited = new Promise((r) => c.once("exit", r));
        c.kill("SIGKILL");
        return exited;
      }),
    );
    children = [];
    expect((await store.openReservations()).map((r) => r.id)).toEqual([held!.id]);
    // A restarted process: its sweep settles the reservation once it has expired, and the event is replayed.
    children.push((await join()).child);
    await eventually(
      () => store.openReservations(),
      (r) => !r.some((x) => x.id === held!.id),
      60_000,
      "the expired reservation settled",
    );
    // The message is answered after all (replayed by the restarted process); its call settled normally.
    await eventually(
      () => platform!.messages.filter((m) => m.chatId === "crash").length,
      (n) => n >= 1,
      60_000,
      "the replayed answer",
    );
    const period = periodOf("day", "Europe/Paris", new Date()).key;
    const counter = await eventually(
      async () => (await store.counters([{ budget: "user/day/tokens", period }]))[0],
      (c) => c?.reserved === 0,
      30_000,
      "nothing reserved",
    );
    const rows = await new UsageStore(db!).recent(10);
    const used = rows.reduce((a, r) => a + r.promptTokens + r.completionTokens, 0);
    console.log(
      `[budgets] killed mid-call: reservation of ${held!.amount} settled by the sweep; spent ${counter!.spent} = ${held!.amount} + ${used} used after`,
    );
    expect(counter!.spent).toBe(held!.amount + used);
  });
});
