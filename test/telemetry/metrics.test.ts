/**
 * The GenAI client metrics over OTLP (issue 30, Build 5): the
 * OpenAI-compatible agent against the fake model, one turn of two model calls
 * (a tool call, then the answer), telemetry started as the app starts it.
 * The receiver gets gen_ai.client.token.usage with the fake model's exact
 * token counts by gen_ai.token.type, and gen_ai.client.operation.duration in
 * seconds, both with the GenAI attributes; over http/json and http/protobuf,
 * at /v1/metrics beside the traces or at OTEL_EXPORTER_OTLP_METRICS_ENDPOINT.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openAiAgent } from "../../src/agent/openai.js";
import { toolRegistry } from "../../src/agent/tools.js";
import { silentLogger } from "../../src/log.js";
import { inSpan, startTelemetry, type TelemetryConfig } from "../../src/telemetry/index.js";
import { FakeOpenAi, type Reply, rawReply, sse } from "../fakes/openai.js";
import { OtlpReceiver, type ReceivedMetric } from "../support/otlp-receiver.js";

const SERVED = "fake-model-2024-06";
const chunk = (delta: Record<string, unknown>, finish: string | null = null) => sse.chunk(delta, finish, { model: SERVED });
const usage = (input: number, output: number) =>
  sse.event({ id: "c", object: "chat.completion.chunk", created: 1, model: SERVED, choices: [], usage: { prompt_tokens: input, completion_tokens: output } });

/** Asks for the tool (23 tokens in, 5 out), then answers from its result (31 in, 7 out). */
function model(body: { messages: Array<{ role: string }> }): Reply {
  if (body.messages.at(-1)?.role === "tool") return rawReply([chunk({ role: "assistant", content: "done" }), chunk({}, "stop"), usage(31, 7), sse.done]);
  return rawReply([
    chunk({ role: "assistant", content: null }),
    chunk({ tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "clock", arguments: "{}" } }] }),
    chunk({}, "tool_calls"),
    usage(23, 5),
    sse.done,
  ]);
}
const clock = { name: "clock", description: "the time", parameters: { type: "object" }, run: async () => "noon" };

let fake: FakeOpenAi;
beforeAll(async () => {
  fake = await FakeOpenAi.start();
  fake.responder = model;
});
afterAll(async () => fake?.close());

/** One turn with telemetry on; the metrics are exported at the shutdown (the periodic interval is left long). */
async function oneTurn(config: Partial<TelemetryConfig>, receiver: OtlpReceiver): Promise<ReceivedMetric[]> {
  const telemetry = await startTelemetry(
    {
      OTEL_SDK_DISABLED: false,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: undefined,
      OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: undefined,
      OTEL_METRIC_EXPORT_INTERVAL: 60_000,
      OTEL_EXPORTER_OTLP_PROTOCOL: undefined,
      OTEL_EXPORTER_OTLP_HEADERS: undefined,
      OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: false,
      ...config,
    },
    silentLogger,
  );
  expect(telemetry.on).toBe(true);
  const agent = openAiAgent({ baseUrl: fake.baseUrl, settings: { model: "fake-model" }, tools: toolRegistry([clock]) });
  await inSpan("turn", { root: true }, async () => {
    for await (const _ of agent.run({ system: "", messages: [{ role: "user", content: "what time?" }], signal: new AbortController().signal }));
  });
  await telemetry.shutdown();
  return receiver.metricExports.flat();
}

function check(metrics: ReceivedMetric[]) {
  const tokens = metrics.filter((m) => m.name === "gen_ai.client.token.usage");
  const duration = metrics.filter((m) => m.name === "gen_ai.client.operation.duration");
  expect(tokens).toHaveLength(1);
  expect(duration).toHaveLength(1);
  const base = {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": "openai",
    "gen_ai.request.model": "fake-model",
    "gen_ai.response.model": SERVED,
    "server.address": "127.0.0.1",
  };
  expect(tokens[0]!).toMatchObject({ type: "histogram", unit: "{token}" });
  const byType = Object.fromEntries(tokens[0]!.points.map((p) => [p.attributes["gen_ai.token.type"], p]));
  expect(Object.keys(byType).sort()).toEqual(["input", "output"]);
  // Two calls each: 23 + 31 tokens in, 5 + 7 out.
  expect(byType.input).toMatchObject({ count: 2, sum: 54, attributes: { ...base, "gen_ai.token.type": "input" } });
  expect(byType.output).toMatchObject({ count: 2, sum: 12, attributes: { ...base, "gen_ai.token.type": "output" } });
  expect(duration[0]!).toMatchObject({ type: "histogram", unit: "s" });
  expect(duration[0]!.points).toHaveLength(1);
  const [d] = duration[0]!.points;
  expect(d!.attributes).toEqual({ ...base, "server.port": expect.any(Number) });
  expect(d!.count).toBe(2);
  expect(d!.sum).toBeGreaterThan(0);
  expect(d!.sum).toBeLessThan(10);
  expect(tokens[0]!.resource["service.name"]).toBe("switchboard");
}

describe("the GenAI client metrics over OTLP", () => {
  it("http/json at the base endpoint's /v1/metrics: token usage by type with the exact counts, the duration in seconds", async () => {
    const receiver = await OtlpReceiver.start();
    try {
      check(await oneTurn({ OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" }, receiver));
      expect(receiver.exports.length).toBeGreaterThan(0);
    } finally {
      await receiver.close();
    }
  });

  it("http/protobuf at OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: the same figures", async () => {
    const traces = await OtlpReceiver.start();
    const metrics = await OtlpReceiver.start();
    try {
      check(await oneTurn({ OTEL_EXPORTER_OTLP_ENDPOINT: traces.endpoint, OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: `${metrics.endpoint}/v1/metrics` }, metrics));
      expect(traces.metricExports).toHaveLength(0);
    } finally {
      await traces.close();
      await metrics.close();
    }
  });
});
