import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isAgentError, openAiAgent, type OpenAiAgentOptions } from "../../src/agent/index.js";
import { FakeOpenAi, rawReply, sse, statusReply, textReply } from "../fakes/openai.js";
import { KEY, memoryLog, runTurn } from "./helpers.js";

let fake: FakeOpenAi;
beforeEach(async () => {
  fake = await FakeOpenAi.start();
});
afterEach(async () => {
  await fake.close();
});

const agent = (o: Partial<OpenAiAgentOptions> = {}) =>
  openAiAgent({ baseUrl: fake.baseUrl, apiKey: KEY, settings: { model: "test-model" }, retryBaseMs: 5, ...o });

describe("openAiAgent streaming", () => {
  it("streams content deltas in order and finishes with the full text", async () => {
    fake.enqueue(textReply(["Hel", "lo", " wörld"]));
    const { outputs, error, text } = await runTurn(agent(), { system: "Be brief.", messages: [{ role: "user", content: "hi", name: "Ana María" }] });
    expect(error).toBeUndefined();
    expect(outputs.filter((o) => o.type === "text-delta").map((o) => (o as { text: string }).text)).toEqual(["Hel", "lo", " wörld"]);
    expect(outputs.at(-1)).toEqual({ type: "done", text: "Hello wörld", toolRounds: 0 });
    expect(text).toBe("Hello wörld");

    const [req] = fake.requests;
    expect(req?.method).toBe("POST");
    expect(req?.url).toBe("/v1/chat/completions");
    expect(req?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(req?.body).toMatchObject({
      model: "test-model",
      stream: true,
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "hi", name: "Ana_Mar_a" },
      ],
    });
    expect(req?.body.tools).toBeUndefined();
  });

  it("maps model settings to request fields, and omits reasoning_effort when thinking is off", async () => {
    fake.enqueue(textReply(["a"]), textReply(["b"]));
    await runTurn(agent({ settings: { model: "m1", thinkingLevel: "high", temperature: 0.3, maxOutputTokens: 256 } }));
    await runTurn(agent({ settings: { model: "m2", thinkingLevel: "off" } }));
    expect(fake.requests[0]?.body).toMatchObject({ model: "m1", reasoning_effort: "high", temperature: 0.3, max_tokens: 256 });
    const second = fake.requests[1]?.body;
    expect(second.model).toBe("m2");
    expect("reasoning_effort" in second || "temperature" in second || "max_tokens" in second).toBe(false);
  });

  it("tolerates comments, CRLF, usage-only chunks, no [DONE], and reads split mid-line and mid-character", async () => {
    const hello = Buffer.from(sse.chunk({ content: "héllo" }).replace(/\n/g, "\r\n"));
    const cut = hello.indexOf(Buffer.from("é")) + 1; // between the two bytes of "é"
    fake.enqueue(
      rawReply([
        ": keep-alive\r\n\r\n",
        hello.subarray(0, 10),
        { pause: 5 },
        hello.subarray(10, cut),
        { pause: 5 },
        hello.subarray(cut),
        `data:${JSON.stringify({ choices: [{ index: 0, delta: { content: "!" }, finish_reason: "stop" }] })}\n\n`,
        sse.event({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 2 } }),
      ]),
    );
    const { error, text } = await runTurn(agent());
    expect(error).toBeUndefined();
    expect(text).toBe("héllo!");
  });

  it("accepts a server that ignores stream:true and answers with one JSON completion", async () => {
    fake.enqueue({
      headers: { "content-type": "application/json" },
      body: [JSON.stringify({ choices: [{ index: 0, message: { role: "assistant", content: "whole" }, finish_reason: "stop" }] })],
    });
    const { error, outputs } = await runTurn(agent());
    expect(error).toBeUndefined();
    expect(outputs).toEqual([
      { type: "text-delta", text: "whole" },
      { type: "done", text: "whole", toolRounds: 0 },
    ]);
  });

  it("warns when the reply was cut off by the token limit", async () => {
    fake.enqueue(rawReply([sse.chunk({ content: "partial" }), sse.chunk({}, "length"), sse.done]));
    const { outputs } = await runTurn(agent());
    expect(outputs.some((o) => o.type === "notice" && o.severity === "warn" && /token limit/.test(o.text))).toBe(true);
    expect(outputs.at(-1)).toMatchObject({ type: "done", text: "partial" });
  });
});

describe("openAiAgent retries", () => {
  it("retries a 429 after the retry-after seconds and then succeeds", async () => {
    fake.enqueue(statusReply(429, { "retry-after": "1" }, JSON.stringify({ error: { message: "slow down" } })), textReply(["ok"]));
    const { error, text } = await runTurn(agent());
    expect(error).toBeUndefined();
    expect(text).toBe("ok");
    expect(fake.requests).toHaveLength(2);
    // Correctness, not speed: the second request must not come before the server's retry-after.
    expect(fake.requests[1]!.at - fake.requests[0]!.at).toBeGreaterThanOrEqual(950);
  });

  it("honours retry-after given as an HTTP date and as retry-after-ms", async () => {
    const delays: number[] = [];
    const sleep = async (ms: number) => void delays.push(ms);
    const date = new Date(Date.now() + 5_000).toUTCString();
    fake.enqueue(statusReply(429, { "retry-after": date }), statusReply(503, { "retry-after-ms": "1500" }), textReply(["ok"]));
    const { error, text } = await runTurn(agent({ sleep }));
    expect(error).toBeUndefined();
    expect(text).toBe("ok");
    expect(delays).toHaveLength(2);
    expect(delays[0]).toBeGreaterThan(2_000); // HTTP dates have one-second resolution
    expect(delays[0]).toBeLessThanOrEqual(5_000);
    expect(delays[1]).toBe(1500);
  });

  it("retries 5xx with backoff and succeeds", async () => {
    fake.enqueue(statusReply(500), statusReply(502), textReply(["fine"]));
    const { error, text } = await runTurn(agent());
    expect(error).toBeUndefined();
    expect(text).toBe("fine");
    expect(fake.requests).toHaveLength(3);
  });

  it("gives up after the bounded attempts with a typed error", async () => {
    fake.enqueue(statusReply(500), statusReply(500), statusReply(500));
    const { error } = await runTurn(agent({ maxRetries: 2 }));
    expect(isAgentError(error, "Upstream")).toBe(true);
    expect((error as Error).message).toMatch(/HTTP 500 after 3 attempt/);
    expect(fake.requests).toHaveLength(3);

    fake.enqueue(statusReply(429), statusReply(429));
    const limited = await runTurn(agent({ maxRetries: 1 }));
    expect(isAgentError(limited.error, "RateLimited")).toBe(true);
  });

  it("does not wait out a retry-after longer than the maximum delay", async () => {
    const delays: number[] = [];
    fake.enqueue(statusReply(429, { "retry-after": "3600" }));
    const { error } = await runTurn(agent({ sleep: async (ms) => void delays.push(ms), maxRetryDelayMs: 10_000 }));
    expect(isAgentError(error, "RateLimited")).toBe(true);
    expect((error as { retryAfterMs?: number }).retryAfterMs).toBe(3_600_000);
    expect(delays).toEqual([]);
    expect(fake.requests).toHaveLength(1);
  });

  it("does not retry a 400 and explains it", async () => {
    fake.enqueue(statusReply(400, {}, JSON.stringify({ error: { message: "unknown field" } })));
    const { error } = await runTurn(agent());
    expect(isAgentError(error, "Upstream")).toBe(true);
    expect((error as Error).message).toContain("unknown field");
    expect(fake.requests).toHaveLength(1);
  });

  it("reports an unreachable server after retrying", async () => {
    const closed = await FakeOpenAi.start();
    const url = closed.baseUrl;
    await closed.close();
    const { error } = await runTurn(agent({ baseUrl: url, maxRetries: 1 }));
    expect(isAgentError(error, "Upstream")).toBe(true);
    expect((error as Error).message).toMatch(/OPENAI_BASE_URL/);
  });
});

describe("openAiAgent failures", () => {
  it("stops on abort mid-stream and closes the HTTP request", async () => {
    // If the client did not close the request, the server would finish the reply after the pause and
    // `closedByClient` would be false.
    fake.enqueue(rawReply([sse.chunk({ content: "first" }), { pause: 10_000 }, sse.chunk({ content: "never" }, "stop"), sse.done]));
    const ctrl = new AbortController();
    const { outputs, error } = await runTurn(agent(), { signal: ctrl.signal }, (o) => {
      if (o.type === "text-delta") ctrl.abort();
    });
    expect(isAgentError(error, "Aborted")).toBe(true);
    expect(outputs).toEqual([{ type: "text-delta", text: "first" }]);
    const [req] = fake.requests;
    await req!.closed;
    expect(req!.closedByClient).toBe(true);
  });

  it("closes the HTTP request when the consumer stops iterating early", async () => {
    fake.enqueue(rawReply([sse.chunk({ content: "first" }), { pause: 10_000 }, sse.chunk({}, "stop"), sse.done]));
    for await (const o of agent().run({ system: "", messages: [{ role: "user", content: "hi" }], signal: new AbortController().signal })) {
      expect(o).toEqual({ type: "text-delta", text: "first" });
      break;
    }
    await fake.requests[0]!.closed;
    expect(fake.requests[0]!.closedByClient).toBe(true);
  });

  it("reports a connection dropped mid-reply as an upstream error", async () => {
    fake.enqueue({ ...rawReply([sse.chunk({ content: "par" })]), reset: true });
    const { error, text } = await runTurn(agent());
    expect(text).toBe("par");
    expect(isAgentError(error, "Upstream")).toBe(true);
    expect((error as Error).message).toMatch(/broke in the middle of a reply/);
    expect(fake.requests).toHaveLength(1); // text was already shown, so no retry
  });

  it("aborts a request that is still waiting for headers", async () => {
    fake.enqueue({ noHeaders: true });
    const ctrl = new AbortController();
    const run = runTurn(agent(), { signal: ctrl.signal });
    await fake.waitForRequests(1);
    ctrl.abort();
    const { error } = await run;
    expect(isAgentError(error, "Aborted")).toBe(true);
    await fake.requests[0]!.closed;
    expect(fake.requests[0]!.closedByClient).toBe(true);
  });

  it("turns non-JSON data into a MalformedStream error", async () => {
    fake.enqueue(rawReply([sse.chunk({ content: "ok " }), "data: {this is not json\n\n"]));
    const { error, text } = await runTurn(agent());
    expect(text).toBe("ok ");
    expect(isAgentError(error, "MalformedStream")).toBe(true);
    expect((error as Error).message).toMatch(/not JSON.*OPENAI_BASE_URL/);
  });

  it("treats a stream that ends before the model finished as malformed", async () => {
    fake.enqueue(rawReply([sse.chunk({ content: "half" })]));
    const { error } = await runTurn(agent());
    expect(isAgentError(error, "MalformedStream")).toBe(true);
    expect((error as Error).message).toMatch(/ended before the model finished/);
  });

  it("rejects an HTML page answered in place of the API", async () => {
    fake.enqueue(rawReply(["<html>hello</html>"], { "content-type": "text/html" }));
    const { error } = await runTurn(agent());
    expect(isAgentError(error, "MalformedStream")).toBe(true);
    expect((error as Error).message).toMatch(/\/v1/);
  });

  it("surfaces an error event sent mid-stream", async () => {
    fake.enqueue(rawReply([sse.chunk({ content: "a" }), sse.event({ error: { message: "model crashed" } })]));
    const { error } = await runTurn(agent());
    expect(isAgentError(error, "Upstream")).toBe(true);
    expect((error as Error).message).toContain("model crashed");
  });

  it("times out when the server never sends headers", async () => {
    fake.enqueue({ noHeaders: true });
    const { error } = await runTurn(agent({ connectTimeoutMs: 150, maxRetries: 0 }));
    expect(isAgentError(error, "Timeout")).toBe(true);
    expect((error as Error).message).toMatch(/did not answer within 150 ms/);
  });

  it("times out when the stream goes silent", async () => {
    fake.enqueue({ ...rawReply([sse.chunk({ content: "start" })]), hang: true });
    const { error, text } = await runTurn(agent({ idleTimeoutMs: 150 }));
    expect(text).toBe("start");
    expect(isAgentError(error, "Timeout")).toBe(true);
    expect((error as Error).message).toMatch(/went silent for 150 ms/);
    await fake.requests[0]!.closed;
    expect(fake.requests[0]!.closedByClient).toBe(true);
  });

  it("never puts the API key in errors or logs, even when the server echoes it", async () => {
    const { log, lines } = memoryLog();
    fake.enqueue(
      statusReply(503, { "retry-after": "0" }, JSON.stringify({ error: { message: `overloaded for ${KEY}` } })),
      statusReply(401, {}, JSON.stringify({ error: { message: `Incorrect API key provided: ${KEY}` } })),
      rawReply([`data: {"bad": ${KEY}\n\n`]),
      rawReply([sse.event({ error: { message: `key ${KEY} revoked` } })]),
    );
    const first = await runTurn(agent({ log }));
    expect(isAgentError(first.error, "Config")).toBe(true);
    expect((first.error as Error).message).toMatch(/OPENAI_API_KEY/);
    expect((first.error as Error).message).toContain("[redacted]");
    const second = await runTurn(agent({ log }));
    expect(isAgentError(second.error, "MalformedStream")).toBe(true);
    const third = await runTurn(agent({ log }));
    expect(isAgentError(third.error, "Upstream")).toBe(true);
    // The key was sent (the server saw it) but never came back out.
    expect(fake.requests.every((r) => r.headers.authorization === `Bearer ${KEY}`)).toBe(true);
    expect(lines()).toContain("retrying");
    expect(lines()).not.toContain(KEY);
  });

  it("rejects a bad base URL with what to set", () => {
    expect(() => openAiAgent({ baseUrl: "localhost:11434", settings: { model: "m" } })).toThrow(/OPENAI_BASE_URL/);
    expect(() => openAiAgent({ baseUrl: "ftp://x/v1", settings: { model: "m" } })).toThrow(/http or https/);
  });
});
