/**
 * The agent's spans on their own (the OpenAI-compatible agent against the
 * fake model, telemetry started as the app starts it): an MCP tool's
 * execute_tool span with mcp.method.name and its server, the approval wait
 * as its child with the decision, the export's headers from
 * OTEL_EXPORTER_OTLP_HEADERS, and a failed model call recorded by its error
 * code, never its message.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openAiAgent } from "../../src/agent/openai.js";
import { toolRegistry } from "../../src/agent/tools.js";
import { silentLogger } from "../../src/log.js";
import { inSpan, startTelemetry, type Telemetry, type TelemetryConfig } from "../../src/telemetry/index.js";
import { FakeOpenAi, statusReply, toolUsingModel } from "../fakes/openai.js";
import { OtlpReceiver } from "../support/otlp-receiver.js";

let fake: FakeOpenAi;
let receiver: OtlpReceiver;
let telemetry: Telemetry;
beforeAll(async () => {
  process.env.OTEL_BSP_SCHEDULE_DELAY = "50";
  fake = await FakeOpenAi.start();
  receiver = await OtlpReceiver.start();
  const config: TelemetryConfig = {
    OTEL_SDK_DISABLED: false,
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: undefined,
    OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: undefined,
    OTEL_METRIC_EXPORT_INTERVAL: 60_000,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_EXPORTER_OTLP_HEADERS: "x-api-key=secret%20key",
    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: false,
  };
  telemetry = await startTelemetry(config, silentLogger);
});
afterAll(async () => {
  await telemetry?.shutdown();
  await receiver?.close();
  await fake?.close();
  delete process.env.OTEL_BSP_SCHEDULE_DELAY;
});

const echo = {
  name: "files__echo",
  server: "files",
  description: "echoes",
  parameters: { type: "object" },
  run: async () => "echoed SECRET-RESULT",
};

async function turn(run: () => Promise<void>): Promise<void> {
  await inSpan("turn", { root: true }, run);
}

describe("the agent's spans", () => {
  it("an MCP tool call: execute_tool with the MCP attributes, the approval wait under it; the export carries the configured headers", async () => {
    fake.responder = toolUsingModel({ trigger: "please", tool: "files__echo", args: '{"text":"SECRET-ARG"}' });
    const agent = openAiAgent({
      baseUrl: fake.baseUrl,
      settings: { model: "m" },
      tools: toolRegistry([echo]),
      approval: async () => {
        await new Promise((r) => setImmediate(r));
        return { decision: "approve", note: "approved by a person" };
      },
    });
    await turn(async () => {
      for await (const _ of agent.run({ system: "", messages: [{ role: "user", content: "please echo" }], signal: new AbortController().signal }));
    });
    const spans = await receiver.until((all) => all.some((s) => s.name === "approval files__echo") && all.some((s) => s.name === "turn"));
    const tool = spans.find((s) => s.name === "execute_tool files__echo")!;
    expect(tool.attributes).toMatchObject({
      "gen_ai.tool.name": "files__echo",
      "gen_ai.tool.type": "extension",
      "mcp.method.name": "tools/call",
      "switchboard.mcp.server": "files",
      "switchboard.tool.decision": "approved",
    });
    const approval = spans.find((s) => s.name === "approval files__echo")!;
    expect(approval.parentSpanId).toBe(tool.spanId);
    expect(approval.attributes["switchboard.approval.decision"]).toBe("approve");
    expect(receiver.exports[0]!.headers["x-api-key"]).toBe("secret key");
    const raw = Buffer.concat(receiver.exports.map((e) => e.raw));
    expect(raw.includes("SECRET-ARG") || raw.includes("SECRET-RESULT")).toBe(false);
  });

  it("a model call that fails is an error span named by its code, without the server's words", async () => {
    fake.responder = undefined;
    fake.enqueue(statusReply(400, {}, JSON.stringify({ error: { message: "SECRET-SERVER-WORDS" } })));
    const agent = openAiAgent({ baseUrl: fake.baseUrl, settings: { model: "broken" }, maxRetries: 0 });
    await expect(
      turn(async () => {
        for await (const _ of agent.run({ system: "", messages: [{ role: "user", content: "hi" }], signal: new AbortController().signal }));
      }),
    ).rejects.toThrow();
    const spans = await receiver.until((all) => all.some((s) => s.name === "chat broken"));
    const chat = spans.find((s) => s.name === "chat broken")!;
    expect(chat.attributes["error.type"]).toEqual(expect.any(String));
    expect(Buffer.concat(receiver.exports.map((e) => e.raw)).includes("SECRET-SERVER-WORDS")).toBe(false);
  });
});
