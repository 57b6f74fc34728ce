import { describe, expect, it } from "vitest";
import { echoAgent, isAgentError } from "../../src/agent/index.js";
import { runTurn } from "./helpers.js";

describe("echoAgent", () => {
  it("answers exactly `echo: <latest user text>`, the same every time", async () => {
    const messages = [
      { role: "user" as const, content: "first" },
      { role: "assistant" as const, content: "echo: first" },
      { role: "user" as const, content: "second one" },
    ];
    const a = await runTurn(echoAgent(), { messages });
    const b = await runTurn(echoAgent(), { messages });
    expect(a.error).toBeUndefined();
    expect(a.text).toBe("echo: second one");
    expect(a.outputs.at(-1)).toEqual({ type: "done", text: "echo: second one", toolRounds: 0 });
    expect(b.outputs).toEqual(a.outputs);
    expect(echoAgent().name).toBe("echo");
  });

  it("streams long text as a few chunks that add up to the answer", async () => {
    const long = "x".repeat(200);
    const { outputs, text } = await runTurn(echoAgent(), { messages: [{ role: "user", content: long }] });
    expect(outputs.filter((o) => o.type === "text-delta").length).toBeGreaterThan(1);
    expect(text).toBe(`echo: ${long}`);
  });

  it("stops emitting as soon as the turn is aborted", async () => {
    const ctrl = new AbortController();
    const { outputs, error } = await runTurn(echoAgent(), { signal: ctrl.signal, messages: [{ role: "user", content: "y".repeat(500) }] }, () => ctrl.abort());
    expect(isAgentError(error, "Aborted")).toBe(true);
    expect(outputs).toHaveLength(1);
  });

  it("does nothing for an already-aborted turn", async () => {
    const ctrl = new AbortController();
    ctrl.abort();
    const { outputs, error } = await runTurn(echoAgent(), { signal: ctrl.signal });
    expect(isAgentError(error, "Aborted")).toBe(true);
    expect(outputs).toEqual([]);
  });
});
