/**
 * Issue 30, acceptance 2: three gateway processes on one PostgreSQL database
 * (SHARED_DATABASE), each exporting to one OTLP receiver in the test. A
 * burst of messages in a few conversations arrives round-robin across the
 * processes (so a message is often recorded by one process and answered by
 * another, and a conversation's lease moves as it drains), and one process
 * is stopped mid-burst (its conversations move to the other two). Every
 * message must still be one connected trace: its root (the webhook request's
 * span), the inbound message, the record, the turn and the send share one trace id, and every parent link resolves inside
 * that trace, whichever processes the spans came from (each process names
 * itself by service.instance.id).
 *
 * Nothing waits on a time window: the stop follows c0's answered (and
 * exported) first half, the end waits for every reply, and the spans are
 * complete once every process has exited (each flushes on its stop).
 */
import type { ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { afterAll, describe, expect, it, onTestFailed } from "vitest";
import { migrate } from "../../src/store/index.js";
import { freshDatabaseUrl } from "../support/db.js";
import { roundRobin, startGateway } from "../support/gateway-processes.js";
import { LoopbackPlatform } from "../support/loopback-platform.js";
import { OtlpReceiver, type ReceivedSpan } from "../support/otlp-receiver.js";

const CHATS = 3;
const PER_CHAT = 16;
const STOP_AFTER = PER_CHAT / 2;

const hash = (id: string) => createHash("sha256").update(id).digest("hex").slice(0, 16);
const instance = (s: ReceivedSpan) => String(s.resource["service.instance.id"]);

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  await exited;
}

/**
 * The spans of one message's trace, checked: every link resolves, and the webhook request's span
 * (the root, HTTP conventions), the inbound message, the record, the turn and the send are there.
 */
function checkTrace(inbound: ReceivedSpan, all: ReceivedSpan[]) {
  const trace = all.filter((s) => s.traceId === inbound.traceId);
  const byId = new Map(trace.map((s) => [s.spanId, s]));
  const roots = trace.filter((s) => s.parentSpanId === "");
  const dangling = trace.filter((s) => s.parentSpanId !== "" && !byId.has(s.parentSpanId)).map((s) => `${s.name}@${instance(s)}`);
  const webhook = roots.filter(
    (s) => s.name === "POST /loopback/update" && s.spanId === inbound.parentSpanId && s.attributes["http.response.status_code"] === 200,
  );
  const records = trace.filter((s) => s.name === "record inbound" && s.parentSpanId === inbound.spanId);
  const turns = trace.filter((s) => s.name === "turn" && s.parentSpanId === inbound.spanId);
  const ancestors = (s: ReceivedSpan): string[] => (byId.has(s.parentSpanId) ? [s.parentSpanId, ...ancestors(byId.get(s.parentSpanId)!)] : []);
  const turnIds = new Set(turns.map((t) => t.spanId));
  const sends = trace.filter((s) => s.name === "send telegram" && ancestors(s).some((a) => turnIds.has(a)));
  return { trace, dangling, roots: roots.length, webhook: webhook.length, records: records.length, turns, sends: sends.length };
}

describe("telemetry across three processes on one PostgreSQL database", () => {
  const children: ChildProcess[] = [];
  let platform: LoopbackPlatform | undefined;
  let receiver: OtlpReceiver | undefined;
  afterAll(async () => {
    for (const c of children) c.kill("SIGKILL");
    await platform?.close();
    await receiver?.close();
  });

  it("a conversation moved between processes mid-burst: each message is still one connected trace", async () => {
    // Which wait a failure (a timeout included) happened in, with what had arrived by then: seen once hanging
    // to the 180 s timeout under a full CI run, with nothing to say where.
    let phase = "start";
    onTestFailed(() =>
      console.log(
        `telemetry across processes failed in phase "${phase}": ${JSON.stringify({
          replies: new Set(platform?.messages.map((m) => m.text)).size,
          spans: receiver?.spans.length,
          children: children.map((c) => ({ pid: c.pid, exitCode: c.exitCode, signal: c.signalCode })),
        })}`,
      ),
    );
    receiver = await OtlpReceiver.start();
    platform = new LoopbackPlatform();
    const platformUrl = await platform.start();
    const dbUrl = await freshDatabaseUrl("postgresql");
    await migrate(dbUrl);
    const env = {
      DATABASE_URL: dbUrl,
      HTTP_PORT: "0",
      DM_POLICY: "open",
      SHARED_DATABASE: "true",
      LOOPBACK_URL: platformUrl,
      LOOPBACK_MODE: "webhook",
      LOG_LEVEL: "warn",
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_BSP_SCHEDULE_DELAY: "50",
    };
    phase = "starting the gateways";
    const gateways = await Promise.all([0, 1, 2].map((i) => startGateway({ ...env, OTEL_RESOURCE_ATTRIBUTES: `service.instance.id=gw${i}` })));
    children.push(...gateways.map((g) => g.child));
    // The proxy reads this array on every request: taking a process out of it stops its deliveries.
    const targets = gateways.map((g) => g.url);
    const proxy = await roundRobin(targets);

    const post = async (c: number, i: number) => {
      const r = await fetch(`${proxy.url}/loopback/update`, {
        method: "POST",
        body: JSON.stringify({ id: 0, chatId: `c${c}`, senderId: `u${c}`, text: `msg ${c}-${i}`, messageId: `m${i}`, date: Date.now() }),
      });
      expect(r.status).toBe(200);
    };
    phase = "the first half of the burst";
    // First half of the burst: every message acknowledged (so recorded, its root span ended).
    await Promise.all(
      Array.from({ length: CHATS }, async (_, c) => {
        for (let i = 0; i < STOP_AFTER; i++) await post(c, i);
      }),
    );
    // Mid-burst: once c0's first half is answered and its turns exported, a process that answered one of
    // them leaves the balancer and stops (finishing what it had taken), while the other chats' first
    // halves may still be in flight. c0's second half must then be answered elsewhere: it moved.
    const c0 = hash("c0");
    const c0Turns = (all: ReceivedSpan[]) => {
      const traces = new Set(all.filter((s) => s.name === "inbound telegram" && s.attributes["switchboard.chat.id_hash"] === c0).map((s) => s.traceId));
      return all.filter((s) => s.name === "turn" && traces.has(s.traceId) && s.attributes["switchboard.turn.outcome"] === "answered");
    };
    phase = "c0's first half answered and exported";
    const before = await receiver.until((all) => c0Turns(all).length >= STOP_AFTER, 60_000);
    const leaving = gateways.findIndex((_, i) => c0Turns(before).some((t) => instance(t) === `gw${i}`));
    targets.splice(targets.indexOf(gateways[leaving]!.url), 1);
    phase = "the second half of the burst";
    const stopping = stop(gateways[leaving]!.child);
    await Promise.all(
      Array.from({ length: CHATS }, async (_, c) => {
        for (let i = STOP_AFTER; i < PER_CHAT; i++) await post(c, i);
      }),
    );
    phase = `gw${leaving} stopping (SIGTERM, draining what it took)`;
    await stopping;
    phase = "every reply";
    const total = CHATS * PER_CHAT;
    const end = Date.now() + 90_000;
    while (new Set(platform.messages.map((m) => m.text)).size < total && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
    expect(new Set(platform.messages.map((m) => m.text)).size).toBe(total);
    // Each process flushes its spans on the way out: once all have exited, the receiver has everything.
    phase = "every gateway stopping";
    await Promise.all(gateways.map((g) => stop(g.child)));
    phase = "checking the traces";
    await proxy.close();

    const spans = receiver.spans;
    const inbounds = spans.filter((s) => s.name === "inbound telegram");
    expect(inbounds).toHaveLength(total);
    expect(new Set(inbounds.map((r) => r.traceId)).size).toBe(total);
    let crossProcess = 0;
    const turnsByChat = new Map<string, Set<string>>();
    for (const root of inbounds) {
      const t = checkTrace(root, spans);
      expect({ dangling: t.dangling, roots: t.roots, webhook: t.webhook, records: t.records, sends: t.sends >= 1 }).toEqual({
        dangling: [],
        roots: 1,
        webhook: 1,
        records: 1,
        sends: true,
      });
      const answered = t.turns.filter((s) => s.attributes["switchboard.turn.outcome"] === "answered");
      expect(answered).toHaveLength(1);
      if (instance(answered[0]!) !== instance(root)) crossProcess++;
      const chat = String(root.attributes["switchboard.chat.id_hash"]);
      turnsByChat.set(chat, (turnsByChat.get(chat) ?? new Set<string>()).add(instance(answered[0]!)));
    }
    const processes = new Set(spans.map(instance));
    console.log(
      `telemetry across processes: ${JSON.stringify({ messages: total, spans: spans.length, stopped: `gw${leaving}`, processes: [...processes], crossProcess, turnProcessesPerChat: [...turnsByChat.values()].map((s) => s.size) })}`,
    );
    // It was a real move: three processes exported, messages recorded on one were answered on another,
    // and c0's turns ran both in the process that left and in another.
    expect(processes.size).toBe(3);
    expect(crossProcess).toBeGreaterThan(0);
    expect(turnsByChat.get(c0)!.has(`gw${leaving}`)).toBe(true);
    expect(turnsByChat.get(c0)!.size).toBeGreaterThan(1);
  }, 180_000);
});
