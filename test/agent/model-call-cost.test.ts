import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { noopLog, openAiAgent, type AgentLog, type AgentOutput } from "../../src/agent/index.js";
import type { CompletionResult } from "../../src/agent/completion.js";
import { metered } from "../../src/agent/metered.js";
import type { MeterTicket, ModelMeter, ModelUsage } from "../../src/agent/model-meter.js";
import { stopTokenCounter, tokenCounterExchanges, whenTokenCounterLoaded } from "../../src/agent/token-counter.js";
import { FakeOpenAi, textReply } from "../fakes/openai.js";
import { KEY, runTurn } from "./helpers.js";

/**
 * What one model call costs the gateway beyond the HTTP exchange (issue 31,
 * the paced bench's model run): no abort of a request that is over, one
 * exchange with the tokenizer's worker, and a settlement the answer waits
 * for beside the turn's commit, not before it.
 */
let fake: FakeOpenAi;
beforeEach(async () => {
  fake = await FakeOpenAi.start();
});
afterEach(async () => {
  await fake.close();
});
afterAll(() => stopTokenCounter());

/** A meter whose settlements are recorded and, while `hold` is set, wait for it. */
function recordingMeter() {
  const settled: ModelUsage[] = [];
  const state: { hold?: Promise<void> } = {};
  const meter: ModelMeter = {
    async reserve(): Promise<MeterTicket> {
      return {
        settle: async (usage) => {
          await state.hold;
          settled.push(usage);
        },
        release: async () => {},
      };
    },
  };
  return { meter, settled, state };
}

describe("a model call's request", () => {
  it("is not aborted once its stream was read to the end (an abort there builds an AbortError and runs the fetch's abort steps for nothing)", async () => {
    const signals: AbortSignal[] = [];
    const recording: typeof fetch = (url, init) => {
      if (init?.signal) signals.push(init.signal);
      return fetch(url, init);
    };
    const agent = openAiAgent({ baseUrl: fake.baseUrl, apiKey: KEY, settings: { model: "m" }, fetch: recording });
    for (const text of ["one", "two"]) {
      fake.enqueue(textReply([text]));
      const r = await runTurn(agent);
      expect(r.error).toBeUndefined();
      expect(r.text).toBe(text);
    }
    expect(signals).toHaveLength(2);
    expect(signals.map((s) => s.aborted)).toEqual([false, false]);
  });

  it("is still closed by the client when the server keeps the stream open after [DONE]", async () => {
    fake.enqueue({ ...textReply(["kept open"]), hang: true });
    const agent = openAiAgent({ baseUrl: fake.baseUrl, apiKey: KEY, settings: { model: "m" } });
    const r = await runTurn(agent);
    expect(r.error).toBeUndefined();
    expect(r.text).toBe("kept open");
    await fake.requests[0]!.closed;
    expect(fake.requests[0]!.closedByClient).toBe(true);
  });
});

describe("a metered model call whose provider sends no usage", () => {
  it("counts its prompt and its answer in one exchange with the tokenizer's worker", async () => {
    await whenTokenCounterLoaded();
    const { meter, settled } = recordingMeter();
    const agent = openAiAgent({ baseUrl: fake.baseUrl, apiKey: KEY, settings: { model: "m" }, meter });
    fake.enqueue(textReply(["hello ", "world"]));
    const before = tokenCounterExchanges();
    const r = await runTurn(agent);
    const done = r.outputs.at(-1) as Extract<AgentOutput, { type: "done" }>;
    await done.settled;
    expect(tokenCounterExchanges() - before).toBe(1);
    expect(settled).toEqual([expect.objectContaining({ estimated: true, completionTokens: 2 })]);
    expect(settled[0]!.promptTokens).toBeGreaterThan(4);
  });

  it("ends its turn before the settlement is written, handing it over in `done` for the turn to wait for", async () => {
    const { meter, settled, state } = recordingMeter();
    let release!: () => void;
    state.hold = new Promise<void>((r) => (release = r));
    const agent = openAiAgent({ baseUrl: fake.baseUrl, apiKey: KEY, settings: { model: "m" }, meter });
    fake.enqueue(textReply(["answer"]));
    const r = await runTurn(agent);
    const done = r.outputs.at(-1) as Extract<AgentOutput, { type: "done" }>;
    expect(done).toMatchObject({ type: "done", text: "answer" });
    expect(settled).toEqual([]);
    let over = false;
    const waiting = done.settled!.then(() => (over = true));
    await new Promise((r) => setImmediate(r));
    expect(over).toBe(false);
    release();
    await waiting;
    expect(settled).toHaveLength(1);
  });

  it("is charged its bounds when the tokenizer's worker stops mid-count, and the log says so (nothing swallowed)", async () => {
    await whenTokenCounterLoaded();
    const { meter, settled } = recordingMeter();
    const warned: Array<{ obj: Record<string, unknown>; msg?: string }> = [];
    const log: AgentLog = { ...noopLog, warn: (obj, msg) => void warned.push({ obj, msg }) };
    // Long enough that the worker is still counting when it is stopped (as in token-counter.test.ts).
    const answer = "x ".repeat(200_000);
    const messages = [{ role: "user", content: "hi" }];
    const settlements: Promise<void>[] = [];
    const call = metered(meter, { kind: "turn", model: "m", messages, settlements, log }, async function* () {
      yield { type: "text-delta", text: answer } satisfies AgentOutput;
      return { text: answer, toolCalls: [], finishReason: "stop" } satisfies CompletionResult;
    });
    for (let step = await call.next(); !step.done; step = await call.next());
    // The settlement's one count is with the worker now; stopping it fails that count.
    await stopTokenCounter();
    await Promise.all(settlements);
    expect(settled).toEqual([expect.objectContaining({ estimated: true, completionTokens: Buffer.byteLength(answer, "utf8") })]);
    expect(settled[0]!.promptTokens).toBeGreaterThan(4);
    expect(warned).toEqual([
      {
        obj: { err: expect.objectContaining({ name: "AgentError", message: expect.stringContaining("token counter") }), model: "m" },
        msg: expect.stringContaining("charged its upper bound"),
      },
    ]);
  });
});
