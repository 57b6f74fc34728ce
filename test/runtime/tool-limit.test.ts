/**
 * A turn that ends at TOOL_MAX_ROUNDS: the OpenAI-compatible agent under the
 * real Runner, against the fake model asking for a tool every round. The
 * turn still counts (turnCount, the transcript) and the user is told what
 * happened and what to do.
 */
import { afterEach, describe, expect, it } from "vitest";
import { openAiAgent } from "../../src/agent/openai.js";
import { approveAll, builtinTools } from "../../src/agent/tools.js";
import { FakeOpenAi, textReply, toolCallReply } from "../fakes/openai.js";
import { finals, makeRuntime, message, notices, privateChat, send, type TestRuntime } from "../support/runtime.js";

describe("a turn that ends at the tool round limit", () => {
  let rt: TestRuntime | undefined;
  let model: FakeOpenAi | undefined;
  afterEach(async () => {
    await rt?.close();
    await model?.close();
  });

  async function setup() {
    model = await FakeOpenAi.start();
    let n = 0;
    model.responder = () => toolCallReply([{ id: `call_${++n}`, name: "current_time", arguments: "{}" }]);
    const agent = openAiAgent({
      baseUrl: model.baseUrl,
      settings: { model: "fake-model" },
      tools: builtinTools(),
      approval: approveAll,
      maxToolRounds: 2,
    });
    rt = await makeRuntime("sqlite", { agent });
    return rt;
  }

  it("with no text counts as a turn, keeps its tool rounds in the transcript and tells the user what happened", async () => {
    const rt = await setup();
    const conv = privateChat();
    expect(await (await send(rt, conv, message(conv, "what time is it, exactly?"))).done).toBe("answered");
    // Two rounds run, the third request asks for more: the limit.
    expect(model!.requests).toHaveLength(3);
    const info = await rt.registry.resolveChatChannel(conv);
    expect(info.turnCount).toBe(1);
    const rows = await rt.transcript.recent(info.id, 10);
    expect(rows.map((r) => r.role)).toEqual(["user", "tool", "tool"]);
    expect(finals(rt.events)).toEqual([]);
    const told = notices(rt.events);
    expect(told).toHaveLength(1);
    expect(told[0]).toMatch(/used its 2 tool rounds.*without (writing )?an answer/i);
    expect(told[0]).toMatch(/continue/i);
    expect(told[0]).toContain("TOOL_MAX_ROUNDS");
    // The notice is the turn's reply: it is in the ledger like any reply, not only on the wire.
    const replies = rt.events.filter((e) => e.kind === "notice");
    expect(replies[0]).toMatchObject({ severity: "warn" });

    // The next turn's model sees the tool results the limit left it with.
    model!.enqueue(textReply(["It is noon."]));
    expect(await (await send(rt, conv, message(conv, "continue"))).done).toBe("answered");
    const body = model!.requests.at(-1)!.body as { messages: Array<{ role: string; tool_call_id?: string }> };
    expect(body.messages.filter((m) => m.role === "tool")).toHaveLength(2);
    expect((await rt.registry.resolveChatChannel(conv)).turnCount).toBe(2);
  });

  it("with text written before the limit, the answer goes out with a notice that it may be incomplete", async () => {
    const rt = await setup();
    model!.enqueue(toolCallReply([{ id: "call_a", name: "current_time", arguments: "{}" }], { text: "Let me check." }));
    const conv = privateChat();
    expect(await (await send(rt, conv, message(conv, "time?"))).done).toBe("answered");
    expect(finals(rt.events)).toEqual(["Let me check."]);
    expect(notices(rt.events)).toEqual([expect.stringMatching(/Stopped after 2 rounds of tool calls.*may be incomplete/)]);
    expect((await rt.registry.resolveChatChannel(conv)).turnCount).toBe(1);
  });
});
