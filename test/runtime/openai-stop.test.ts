import { afterEach, describe, expect, it } from "vitest";
import { openAiAgent } from "../../src/agent/openai.js";
import { stoppedFromMeta } from "../../src/runtime/stop.js";
import { FakeOpenAi, textReply } from "../fakes/openai.js";
import { finals, makeRuntime, message, notices, privateChat, send, waitUntil, type TestRuntime } from "../support/runtime.js";

/**
 * The OpenAI-compatible provider driven by the real Runner: /stop aborts the
 * HTTP stream mid-answer, and the transcript keeps what the chat was shown.
 */
describe("OpenAI-compatible agent under the Runner", () => {
  let rt: TestRuntime | undefined;
  let server: FakeOpenAi | undefined;
  afterEach(async () => {
    await rt?.close();
    await server?.close();
  });

  it("streams an answer into the transcript; /stop aborts the request mid-stream and keeps the partial answer, marked stopped", async () => {
    server = await FakeOpenAi.start();
    server.enqueue(textReply(["Hello", " there"]), textReply(["one ", "two ", "three ", "four ", "five"], { pauseMs: 150 }));
    const agent = openAiAgent({ baseUrl: server.baseUrl, apiKey: "sk-test-key", settings: { model: "fake-model" } });
    rt = await makeRuntime("sqlite", { agent });
    const conv = privateChat();
    expect(await (await send(rt, conv, message(conv, "hi"))).done).toBe("answered");
    expect(finals(rt.events)).toEqual(["Hello there"]);
    const long = await send(rt, conv, message(conv, "count slowly"));
    await waitUntil(() => rt!.events.some((e) => e.kind === "text-delta" && e.text.includes("one")));
    await send(rt, conv, message(conv, "/stop"));
    expect(await long.done).toBe("fenced");
    const req = server.requests[1]!;
    await req.closed;
    expect(req.closedByClient).toBe(true);
    expect(notices(rt.events)).toContain("Stopped.");
    expect(finals(rt.events)).toEqual(["Hello there"]);
    expect(server.requests[1]!.body.messages.at(-1)).toMatchObject({ role: "user", content: "count slowly" });
    // What the chat was shown stays: the question and the partial answer, marked stopped, once; no turn is counted.
    const streamed = rt.events.filter((e) => e.kind === "text-delta").at(-1)!;
    const info = await rt.registry.resolveChatChannel(conv);
    const rows = await rt.transcript.recent(info.id, 10);
    expect(rows.map((r) => [r.role, r.content, stoppedFromMeta(r.meta)])).toEqual([
      ["user", "hi", false],
      ["assistant", "Hello there", false],
      ["user", "count slowly", false],
      ["assistant", "text" in streamed ? streamed.text : "", true],
    ]);
    expect(rows.at(-1)!.content).toMatch(/^one /);
    expect(rows.at(-1)!.content).not.toContain("five");
    expect(info.turnCount).toBe(1);

    // The next turn's model sees the stopped exchange as the chat did (the window holds it, as a restart would read it).
    server.enqueue(textReply(["ok"]));
    expect(await (await send(rt, conv, message(conv, "go on"))).done).toBe("answered");
    expect(server.requests[2]!.body.messages.slice(-3)).toEqual([
      { role: "user", content: "count slowly" },
      { role: "assistant", content: rows.at(-1)!.content },
      { role: "user", content: "go on" },
    ]);
  });
});
