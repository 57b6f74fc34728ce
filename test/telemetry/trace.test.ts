/**
 * One Telegram message, answered by the fake OpenAI-compatible model after
 * one tool call, through the real gateway and grammY: an OTLP receiver in
 * the test gets one trace (root, recording, queue wait, turn, both model
 * calls, the tool call and its approval, the send) with correct parents, the
 * GenAI attributes with the fake model's exact token counts, hashed ids, no
 * message text unless the capture variable says so; the model request
 * carries the trace's traceparent; log lines inside the trace name it.
 * Decoded from http/protobuf (content off) and http/json (content on).
 */
import { createHash, randomUUID } from "node:crypto";
import { PassThrough } from "node:stream";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { TelegramAdapter } from "../../adapters/telegram/index.js";
import { createLogger } from "../../src/log.js";
import { FakeOpenAi, type Reply, rawReply, sse } from "../fakes/openai.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { eventually, startApp } from "../support/app.js";
import { OtlpReceiver, type ReceivedSpan } from "../support/otlp-receiver.js";

const SERVED = "fake-model-2024-06";
const hash = (id: string) => createHash("sha256").update(id).digest("hex").slice(0, 16);

const chunk = (delta: Record<string, unknown>, finish: string | null = null) => sse.chunk(delta, finish, { model: SERVED });
const usage = (input: number, output: number) =>
  sse.event({
    id: "chatcmpl-1",
    object: "chat.completion.chunk",
    created: 1,
    model: SERVED,
    choices: [],
    usage: { prompt_tokens: input, completion_tokens: output },
  });

/** Asks for current_time (23 tokens in, 5 out), then answers from its result (31 in, 7 out). */
function model(body: { messages: Array<{ role: string }> }): Reply {
  if (body.messages.at(-1)?.role === "tool")
    return rawReply([chunk({ role: "assistant", content: "" }), chunk({ content: "It is noon by the clock." }), chunk({}, "stop"), usage(31, 7), sse.done]);
  return rawReply([
    chunk({ role: "assistant", content: null }),
    chunk({ tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "current_time", arguments: "{}" } }] }),
    chunk({}, "tool_calls"),
    usage(23, 5),
    sse.done,
  ]);
}

const NEEDED = [
  "inbound telegram",
  "record inbound",
  "queue wait",
  "turn",
  `chat fake-model`,
  "execute_tool current_time",
  "approval current_time",
  "send telegram",
];

let fake: FakeOpenAi;
beforeAll(async () => {
  // The batch processor exports every 50 ms here (the SDK reads it from the environment itself).
  process.env.OTEL_BSP_SCHEDULE_DELAY = "50";
  fake = await FakeOpenAi.start();
  fake.responder = model;
});
afterAll(async () => {
  delete process.env.OTEL_BSP_SCHEDULE_DELAY;
  await fake.close();
});
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function run(env: Record<string, string>, receiver: OtlpReceiver) {
  const tg = new FakeTelegram();
  await tg.start();
  cleanups.push(() => tg.close());
  const logs = new PassThrough();
  const lines: string[] = [];
  logs.on("data", (b: Buffer) => lines.push(...b.toString("utf8").split("\n").filter(Boolean)));
  const adapter = new TelegramAdapter({ token: tg.token, apiRoot: tg.apiRoot, mode: "polling", pollingTimeoutSec: 1 });
  const { app } = await startApp(
    "sqlite",
    [adapter],
    { OPENAI_BASE_URL: fake.baseUrl, OPENAI_MODEL: "fake-model", OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, ...env },
    { log: createLogger({ level: "debug", format: "json", destination: logs }) },
  );
  cleanups.push(() => app.stop());
  const secret = `PLUM-${randomUUID().slice(0, 8)} what time is it?`;
  const alice = tg.user("Alice");
  const dm = tg.privateChat(alice);
  const requestsBefore = fake.requests.length;
  tg.userMessage({ chat: dm, from: alice, text: secret });
  const [reply] = await eventually(
    () => tg.sent({ chatId: dm.id }),
    (s) => s.length >= 1,
    15_000,
    "the reply",
  );
  expect(reply!.text).toBe("It is noon by the clock.");
  const spans = await receiver.until((all) => {
    const root = all.find((s) => s.name === "inbound telegram");
    return !!root && NEEDED.every((n) => all.some((s) => s.name === n && s.traceId === root.traceId));
  });
  const root = spans.find((s) => s.name === "inbound telegram")!;
  const trace = spans.filter((s) => s.traceId === root.traceId);
  return { secret, dm, alice, root, trace, requests: fake.requests.slice(requestsBefore), lines };
}

const one = (spans: ReceivedSpan[], name: string) => spans.filter((s) => s.name === name);

describe("telemetry: one trace per message", () => {
  it("http/protobuf, content off: the spans, their parents, the GenAI attributes, hashed ids and no text", async () => {
    const receiver = await OtlpReceiver.start();
    cleanups.push(() => receiver.close());
    const { secret, dm, alice, root, trace, requests, lines } = await run({}, receiver);
    expect(receiver.exports[0]!.contentType).toBe("application/x-protobuf");

    // One root; every needed span in its trace, each under the right parent.
    expect(root.parentSpanId).toBe("");
    const [record] = one(trace, "record inbound");
    const [queue] = one(trace, "queue wait");
    const [turn] = one(trace, "turn");
    expect(record!.parentSpanId).toBe(root.spanId);
    expect(queue!.parentSpanId).toBe(root.spanId);
    expect(turn!.parentSpanId).toBe(root.spanId);
    const chats = one(trace, "chat fake-model");
    expect(chats).toHaveLength(2);
    for (const c of chats) expect(c.parentSpanId).toBe(turn!.spanId);
    const [tool] = one(trace, "execute_tool current_time");
    expect(tool!.parentSpanId).toBe(turn!.spanId);
    expect(one(trace, "approval current_time")[0]!.parentSpanId).toBe(tool!.spanId);
    const byId = new Map(trace.map((s) => [s.spanId, s]));
    const ancestors = (s: ReceivedSpan): string[] => (byId.has(s.parentSpanId) ? [s.parentSpanId, ...ancestors(byId.get(s.parentSpanId)!)] : []);
    for (const send of one(trace, "send telegram")) expect(ancestors(send)).toContain(turn!.spanId);

    // The GenAI conventions, with the fake model's exact token counts, in call order.
    const [first, second] = [...chats].sort(
      (a, b) => (a.attributes["gen_ai.usage.input_tokens"] as number) - (b.attributes["gen_ai.usage.input_tokens"] as number),
    );
    expect(first!.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "openai",
      "gen_ai.request.model": "fake-model",
      "gen_ai.response.model": SERVED,
      "gen_ai.usage.input_tokens": 23,
      "gen_ai.usage.output_tokens": 5,
      "gen_ai.response.finish_reasons": ["tool_calls"],
    });
    expect(second!.attributes).toMatchObject({ "gen_ai.usage.input_tokens": 31, "gen_ai.usage.output_tokens": 7, "gen_ai.response.finish_reasons": ["stop"] });
    expect(tool!.attributes).toMatchObject({ "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "current_time", "gen_ai.tool.call.id": "call_1" });
    expect(root.resource["service.name"]).toBe("switchboard");

    // Ids hashed; no text, prompt, tool argument or result anywhere in what was exported.
    expect(root.attributes["switchboard.chat.id_hash"]).toBe(hash(String(dm.id)));
    expect(root.attributes["switchboard.user.id_hash"]).toBe(hash(String(alice.id)));
    for (const s of trace) expect(Object.values(s.attributes)).not.toContain(String(dm.id));
    const raw = Buffer.concat(receiver.exports.map((e) => e.raw));
    for (const text of [secret.slice(0, 13), "noon by the clock", "UTC:", "gen_ai.input.messages", "gen_ai.tool.call.result"])
      expect(raw.includes(text)).toBe(false);

    // The model requests carry the trace: each one's traceparent names its own chat span.
    const parents = requests.map((r) => String(r.headers.traceparent));
    expect(parents.sort()).toEqual(chats.map((c) => `00-${root.traceId}-${c.spanId}-01`).sort());
    expect(requests[0]!.body.stream_options).toEqual({ include_usage: true });

    // Log lines logged inside the trace name it.
    const traced = lines.map((l) => JSON.parse(l) as { trace_id?: string; span_id?: string; msg: string }).filter((l) => l.trace_id === root.traceId);
    expect(traced.length).toBeGreaterThan(0);
    for (const l of traced) expect(l.span_id).toMatch(/^[0-9a-f]{16}$/);
  }, 40_000);

  it("http/json with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true: the text is there", async () => {
    const receiver = await OtlpReceiver.start();
    cleanups.push(() => receiver.close());
    const { secret, trace } = await run({ OTEL_EXPORTER_OTLP_PROTOCOL: "http/json", OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "true" }, receiver);
    expect(receiver.exports[0]!.contentType).toBe("application/json");
    const chats = one(trace, "chat fake-model");
    expect(chats.some((c) => String(c.attributes["gen_ai.input.messages"]).includes(secret))).toBe(true);
    expect(chats.some((c) => String(c.attributes["gen_ai.output.messages"]).includes("It is noon by the clock."))).toBe(true);
    expect(one(trace, "execute_tool current_time")[0]!.attributes["gen_ai.tool.call.result"]).toMatch(/^UTC: /);
    expect(Buffer.concat(receiver.exports.map((e) => e.raw)).includes(secret)).toBe(true);
  }, 40_000);
});
