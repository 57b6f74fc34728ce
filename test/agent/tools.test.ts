import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  approveAll,
  builtinTools,
  DENIED,
  openAiAgent,
  toolRegistry,
  type ApprovalHandler,
  type OpenAiAgentOptions,
  type ToolCall,
} from "../../src/agent/index.js";
import { FakeOpenAi, rawReply, sse, textReply, toolCallReply } from "../fakes/openai.js";
import { KEY, runTurn } from "./helpers.js";

let fake: FakeOpenAi;
beforeEach(async () => {
  fake = await FakeOpenAi.start();
});
afterEach(async () => {
  await fake.close();
});

const NOW = new Date("2024-05-06T07:08:09.000Z");
const agent = (o: Partial<OpenAiAgentOptions> = {}) =>
  openAiAgent({ baseUrl: fake.baseUrl, apiKey: KEY, settings: { model: "tool-model" }, tools: builtinTools({ now: () => NOW }), ...o });

/** The `tool` messages the server received in request `n`. */
const toolMessages = (n: number): Array<{ role: string; tool_call_id: string; content: string }> =>
  (fake.requests[n]?.body.messages ?? []).filter((m: { role: string }) => m.role === "tool");

describe("tool loop", () => {
  it("denies tool calls by default and tells the model so", async () => {
    fake.enqueue(toolCallReply([{ id: "call_a", name: "current_time", arguments: "{}" }]), textReply(["I cannot check the time."]));
    const { error, outputs, text } = await runTurn(agent());
    expect(error).toBeUndefined();
    expect(text).toBe("I cannot check the time.");
    expect(outputs.at(-1)).toEqual({ type: "done", text: "I cannot check the time.", toolRounds: 1 });
    expect(outputs.some((o) => o.type === "notice" && o.text.includes(DENIED))).toBe(true);

    expect(fake.requests[0]?.body.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual(["current_time"]);
    const sent = fake.requests[1]?.body.messages;
    expect(sent.at(-2)).toEqual({
      role: "assistant",
      content: null,
      tool_calls: [{ id: "call_a", type: "function", function: { name: "current_time", arguments: "{}" } }],
    });
    expect(toolMessages(1)).toHaveLength(1);
    expect(toolMessages(1)[0]?.tool_call_id).toBe("call_a");
    expect(toolMessages(1)[0]?.content).toMatch(/^denied by approval policy/);
  });

  it("runs an approved call and sends its result back as a tool message; the final answer streams", async () => {
    const asked: ToolCall[] = [];
    const approval: ApprovalHandler = async (call) => {
      asked.push(call);
      return "approve";
    };
    fake.enqueue(
      toolCallReply([{ id: "call_t", name: "current_time", arguments: '{"timezone":"UTC"}' }], { fragment: 3 }),
      textReply(["It is ", "07:08 UTC."]),
    );
    const { error, outputs, text } = await runTurn(agent({ approval }));
    expect(error).toBeUndefined();
    expect(asked).toEqual([{ id: "call_t", name: "current_time", arguments: '{"timezone":"UTC"}' }]);
    expect(toolMessages(1)).toEqual([{ role: "tool", tool_call_id: "call_t", content: expect.stringContaining("2024-05-06T07:08:09.000Z") }]);
    expect(outputs.filter((o) => o.type === "text-delta")).toHaveLength(2);
    expect(text).toBe("It is 07:08 UTC.");
    expect(outputs.at(-1)).toMatchObject({ type: "done", toolRounds: 1 });
  });

  it("handles several calls in one round, without ids, and passes queries to search_sessions", async () => {
    const queries: string[] = [];
    const tools = builtinTools({ now: () => NOW, searchSessions: async (q) => (queries.push(q), `found: ${q}`) });
    fake.enqueue(
      toolCallReply(
        [
          { name: "search_sessions", arguments: '{"query":"trip to Rome"}' },
          { name: "current_time", arguments: "" },
        ],
        { omitIds: true, text: "Let me look. " },
      ),
      textReply(["Done."]),
    );
    const { error, text } = await runTurn(agent({ tools, approval: approveAll }));
    expect(error).toBeUndefined();
    expect(queries).toEqual(["trip to Rome"]);
    const results = toolMessages(1);
    expect(results.map((r) => r.content)).toEqual(["found: trip to Rome", expect.stringContaining("UTC:")]);
    // Invented ids are unique and match the assistant message's calls.
    const calls = fake.requests[1]?.body.messages.at(-3).tool_calls;
    expect(calls.map((c: { id: string }) => c.id)).toEqual(results.map((r) => r.tool_call_id));
    expect(new Set(results.map((r) => r.tool_call_id)).size).toBe(2);
    expect(fake.requests[1]?.body.messages.at(-3).content).toBe("Let me look. ");
    // Later rounds' text is separated from earlier text.
    expect(text).toBe("Let me look. \n\nDone.");
  });

  it("ends the turn at the round limit, marked so (with no text the turn tells the user; with text, a notice says it may be incomplete)", async () => {
    const call = { name: "current_time", arguments: "{}" };
    // A fourth request would get a 500 from the fake (nothing scripted): the limit stops before it.
    fake.enqueue(toolCallReply([call]), toolCallReply([call]), toolCallReply([call]));
    const { error, outputs } = await runTurn(agent({ approval: approveAll, maxToolRounds: 2 }));
    expect(error).toBeUndefined();
    expect(outputs.filter((o) => o.type === "notice")).toEqual([]);
    expect(outputs.at(-1)).toEqual({ type: "done", text: "", toolRounds: 2, toolLimit: true });
    expect(fake.requests).toHaveLength(3);

    fake.enqueue(toolCallReply([call], { text: "Looking. " }), toolCallReply([call]), toolCallReply([call]));
    const partial = await runTurn(agent({ approval: approveAll, maxToolRounds: 2 }));
    const notices = partial.outputs.filter((o) => o.type === "notice");
    expect(notices.at(-1)).toMatchObject({ severity: "warn", text: expect.stringContaining("Stopped after 2 rounds") });
    expect(partial.outputs.at(-1)).toEqual({ type: "done", text: "Looking. ", toolRounds: 2, toolLimit: true });
  });

  it("reports unknown tools and invalid JSON arguments to the model instead of failing", async () => {
    fake.enqueue(
      toolCallReply([
        { id: "u", name: "rm_rf", arguments: "{}" },
        { id: "j", name: "current_time", arguments: "{not json" },
        { id: "z", name: "current_time", arguments: '{"timezone":"Mars/Olympus"}' },
      ]),
      textReply(["ok"]),
    );
    const { error } = await runTurn(agent({ approval: approveAll }));
    expect(error).toBeUndefined();
    const [unknown, badJson, badZone] = toolMessages(1).map((m) => m.content);
    expect(unknown).toMatch(/no tool named "rm_rf".*current_time/);
    expect(badJson).toMatch(/not valid JSON/);
    expect(badZone).toMatch(/unknown time zone "Mars\/Olympus"/);
  });

  it("treats a failing approval handler as a denial", async () => {
    fake.enqueue(toolCallReply([{ name: "current_time", arguments: "{}" }]), textReply(["ok"]));
    const { error } = await runTurn(
      agent({
        approval: async () => {
          throw new Error("ui gone");
        },
      }),
    );
    expect(error).toBeUndefined();
    expect(toolMessages(1)[0]?.content).toMatch(/^denied by approval policy/);
  });

  it("rejects a tool call without a function name as malformed", async () => {
    fake.enqueue(rawReply([sse.chunk({ tool_calls: [{ index: 0, id: "x", function: { arguments: "{}" } }] }), sse.chunk({}, "tool_calls"), sse.done]));
    const { error } = await runTurn(agent());
    expect((error as { code?: string }).code).toBe("MalformedStream");
  });
});

describe("built-in tools", () => {
  it("offers search_sessions only when a search function is injected", () => {
    expect(builtinTools().names()).toEqual(["current_time"]);
    expect(builtinTools({ searchSessions: async () => "" }).names()).toEqual(["current_time", "search_sessions"]);
  });

  it("validates arguments and explains bad ones", async () => {
    const search = builtinTools({ searchSessions: async () => "" }).get("search_sessions")!;
    const signal = new AbortController().signal;
    expect(await search.run({}, { signal })).toMatch(/invalid arguments for search_sessions: query/);
    expect(await search.run({ query: "x" }, { signal })).toBe("No matching conversations.");
  });

  it("refuses duplicate or invalid tool names", () => {
    const t = builtinTools().list()[0]!;
    expect(() => toolRegistry([t, t])).toThrow(/registered twice/);
    expect(() => toolRegistry([{ ...t, name: "has space" }])).toThrow(/invalid/);
  });
});
