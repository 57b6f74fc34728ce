/**
 * Probe: the schedules API (`/api/v1/schedules`) from outside, through the
 * whole app over real HTTP on a real SQLite file.
 *
 * - A chat holds at most 50 open jobs (MAX_JOBS_PER_CHAT), however many
 *   creations arrive at once: the count and the insert were separate
 *   statements, so 80 concurrent creations through the job service (which
 *   the API, the CLI, the agent's tool and /remind share) all counted below
 *   50 and all inserted. Over HTTP the edge's own pace happened to hide it.
 * - Several bots of one platform in one chat: the messages API answers 409
 *   ("name one") and takes `conversation.bot`; the schedules API took the
 *   bot that spoke last, so a job went out under whichever bot that was.
 * - `at` without an offset was read by Date.parse in the server's own zone,
 *   whatever `timezone` said (and any text Date.parse takes passed): a job
 *   for 09:00 in Tokyo ran at 09:00 wherever the gateway runs. Now a local
 *   time is read in the job's zone, as /remind reads it, and `at` must be
 *   ISO 8601.
 * - The `schedule` scope cannot be stepped around by spelling the path
 *   another way (trailing slash, double slash, percent-encoding, case).
 */
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { eventually, startApp } from "../../support/app.js";
import { MemoryAdapter } from "../../support/memory-adapter.js";

const OP = "operator-token-probe-schedules-0123456789";
const SCHED = "s".repeat(40);
const SEND = "m".repeat(40);
const TOKENS = `sched:schedule:${SCHED},sender:send+read:${SEND}`;

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function boot(adapters: MemoryAdapter[]) {
  const { app, url } = await startApp("sqlite", adapters, { OPERATOR_TOKEN: OP, API_TOKENS: TOKENS });
  cleanups.push(() => app.stop());
  return { app, base: url.replace("0.0.0.0", "127.0.0.1") };
}

async function call(base: string, path: string, token: string, o: { method?: string; body?: unknown; key?: string } = {}) {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (o.body !== undefined) headers["content-type"] = "application/json";
  if (o.key) headers["idempotency-key"] = o.key;
  const res = await fetch(`${base}${path}`, {
    method: o.method ?? (o.body === undefined ? "GET" : "POST"),
    headers,
    body: o.body === undefined ? undefined : JSON.stringify(o.body),
  });
  return { status: res.status, json: (await res.json().catch(() => null)) as Record<string, any> | null };
}

/** One raw HTTP/1.1 request per socket, every socket written before any answer is read: the server has them all at once. */
async function rawBurst(base: string, requests: string[]): Promise<number[]> {
  const { hostname, port } = new URL(base);
  const sockets = await Promise.all(
    requests.map(
      () =>
        new Promise<net.Socket>((resolve, reject) => {
          const s = net.connect(Number(port), hostname, () => resolve(s));
          s.once("error", reject);
        }),
    ),
  );
  const answers = sockets.map(
    (s) =>
      new Promise<number>((resolve, reject) => {
        let got = "";
        s.setEncoding("latin1");
        s.on("data", (d: string) => (got += d));
        s.once("error", reject);
        s.once("end", () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(got)?.[1] ?? 0)));
      }),
  );
  sockets.forEach((s, i) => s.write(requests[i]!));
  return Promise.all(answers);
}

describe("probe: the schedules API's reach", () => {
  it("80 concurrent POSTs for one chat leave at most 50 open jobs (MAX_JOBS_PER_CHAT)", async () => {
    const adapter = new MemoryAdapter();
    const { app, base } = await boot([adapter]);
    await adapter.ctx.inbound(adapter.dm("42", "hello"));
    await eventually(
      () => adapter.to("42").length,
      (n) => n >= 1,
      10_000,
      "the echo",
    );
    const body = { conversation: { platform: "telegram", chat: "42" }, every: "1h", text: "ping" };
    const json = JSON.stringify(body);
    const { host } = new URL(base);
    const request =
      `POST /api/v1/schedules HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${SCHED}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(json)}\r\nConnection: close\r\n\r\n${json}`;
    const answers = await rawBurst(
      base,
      Array.from({ length: 80 }, () => request),
    );
    const created = answers.filter((s) => s === 201).length;
    expect(answers.every((s) => s === 201 || s === 400)).toBe(true);
    const open = await app.jobs.service.list();
    expect(open.length).toBe(created);
    expect(created).toBe(50);
  });

  it("80 concurrent creations through the job service leave at most 50 open jobs in the chat", async () => {
    const adapter = new MemoryAdapter();
    const { app } = await boot([adapter]);
    await adapter.ctx.inbound(adapter.dm("44", "hello"));
    await eventually(
      () => adapter.to("44").length,
      (n) => n >= 1,
      10_000,
      "the echo",
    );
    const target = await app.jobs.service.locate({ platform: "telegram", chat: "44" });
    const made = await Promise.allSettled(
      Array.from({ length: 80 }, () =>
        app.jobs.service.create({ target, timing: { kind: "every", spec: "3600000", timezone: "UTC" }, action: "text", text: "x", createdBy: "cli" }),
      ),
    );
    expect(made.filter((r) => r.status === "fulfilled").length).toBe(50);
    expect((await app.jobs.service.list()).length).toBe(50);
  });

  it("several bots in one chat: a job without `bot` is refused (409) as a message is; with `bot` it goes out under that bot", async () => {
    const a = new MemoryAdapter("777");
    const b = new MemoryAdapter("888");
    const { app, base } = await boot([a, b]);
    await a.ctx.inbound(a.group("-100300", "5", "hello from a"));
    await b.ctx.inbound(b.group("-100300", "5", "hello from b"));
    await eventually(
      async () => (await app.jobs.service.store.conversationsIn("telegram", "-100300")).length > 0,
      (x) => x,
      10_000,
      "the chat's address",
    );
    // Both addresses recorded (the directory writes off the reply path).
    await eventually(
      async () => {
        const r = await call(base, "/api/v1/messages", SEND, { body: { conversation: { platform: "telegram", chat: "-100300" }, text: "hi" }, key: "k1" });
        return r.status;
      },
      (s) => s === 409,
      10_000,
      "the messages API's 409 for two bots",
    );
    const job = await call(base, "/api/v1/schedules", SCHED, { body: { conversation: { platform: "telegram", chat: "-100300" }, every: "1h", text: "ping" } });
    expect(job.status).toBe(409);
    const pinned = await call(base, "/api/v1/schedules", SCHED, {
      body: { conversation: { platform: "telegram", chat: "-100300", bot: "777" }, every: "1h", text: "ping" },
    });
    expect(pinned.status).toBe(201);
    expect(pinned.json!.conversation.botId).toBe("777");
    const other = await call(base, "/api/v1/schedules", SCHED, {
      body: { conversation: { platform: "telegram", chat: "-100300", bot: "888" }, every: "1h", text: "ping" },
    });
    expect(other.status).toBe(201);
    expect(other.json!.conversation.botId).toBe("888");
  });

  it("`at` without an offset is read in the job's time zone, never the server's; a non-ISO `at` is refused", async () => {
    const adapter = new MemoryAdapter();
    const { base } = await boot([adapter]);
    await adapter.ctx.inbound(adapter.dm("45", "hello"));
    await eventually(
      () => adapter.to("45").length,
      (n) => n >= 1,
      10_000,
      "the echo",
    );
    const conversation = { platform: "telegram", chat: "45" };
    const local = await call(base, "/api/v1/schedules", SCHED, { body: { conversation, at: "2031-01-05T09:00", timezone: "Asia/Tokyo", text: "x" } });
    expect(local.status).toBe(201);
    expect(local.json!.nextRunAt).toBe("2031-01-05T00:00:00.000Z");
    const offset = await call(base, "/api/v1/schedules", SCHED, { body: { conversation, at: "2031-01-05T09:00:00+02:00", timezone: "Asia/Tokyo", text: "x" } });
    expect(offset.json!.nextRunAt).toBe("2031-01-05T07:00:00.000Z");
    const prose = await call(base, "/api/v1/schedules", SCHED, { body: { conversation, at: "January 5, 2031 09:00", text: "x" } });
    expect(prose.status).toBe(400);
  });

  it("a token without the schedule scope reaches no schedules route by any spelling of the path", async () => {
    const adapter = new MemoryAdapter();
    const { app, base } = await boot([adapter]);
    await adapter.ctx.inbound(adapter.dm("43", "hello"));
    await eventually(
      () => adapter.to("43").length,
      (n) => n >= 1,
      10_000,
      "the echo",
    );
    const made = await call(base, "/api/v1/schedules", OP, { body: { conversation: { platform: "telegram", chat: "43" }, every: "1h", text: "ping" } });
    expect(made.status).toBe(201);
    const id = made.json!.id as string;
    const spellings = [
      "/api/v1/schedules",
      "/api/v1/schedules/",
      "/api/v1//schedules",
      "/api/v1/schedules?all=true",
      "/api/v1/%73chedules",
      "/api/v1/Schedules",
      "/api/v1/schedules/./",
      "/api/v1/x/../schedules",
      `/api/v1/schedules/${id}`,
      `/api/v1/schedules//${id}`,
      `/api/v1/%73chedules/${id}`,
    ];
    for (const p of spellings) {
      for (const method of ["GET", "DELETE"]) {
        const r = await call(base, p, SEND, { method });
        expect([403, 404], `${method} ${p}`).toContain(r.status);
        expect(JSON.stringify(r.json)).not.toContain(id);
      }
    }
    expect((await app.jobs.service.get(id)).status).toBe("active");
  });
});
