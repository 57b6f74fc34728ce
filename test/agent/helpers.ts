import { Writable } from "node:stream";
import pino from "pino";
import { expect } from "vitest";
import type { Agent, AgentOutput, ChatMessage, TurnRequest } from "../../src/agent/index.js";

export const KEY = "sk-test-SECRET-0123456789abcdef";

export interface Outcome {
  outputs: AgentOutput[];
  error: unknown;
  text: string;
}

/** Runs a turn to the end, capturing outputs and the error instead of throwing; checks the key leaked nowhere. */
export async function runTurn(
  agent: Agent,
  req: Partial<TurnRequest> & { messages?: ChatMessage[] } = {},
  onOutput?: (o: AgentOutput) => void,
): Promise<Outcome> {
  const outputs: AgentOutput[] = [];
  let error: unknown;
  try {
    for await (const o of agent.run({
      system: req.system ?? "You are a test.",
      messages: req.messages ?? [{ role: "user", content: "hi" }],
      signal: req.signal ?? new AbortController().signal,
    })) {
      outputs.push(o);
      onOutput?.(o);
    }
  } catch (e) {
    error = e;
  }
  if (error !== undefined) assertNoKey(error);
  const text = outputs.flatMap((o) => (o.type === "text-delta" ? [o.text] : [])).join("");
  return { outputs, error, text };
}

export function assertNoKey(e: unknown): void {
  const seen = new Set<unknown>();
  let cur: unknown = e;
  while (cur && !seen.has(cur)) {
    seen.add(cur);
    const err = cur as { message?: unknown; stack?: unknown };
    expect(String(err.message ?? "")).not.toContain(KEY);
    expect(String(err.stack ?? "")).not.toContain(KEY);
    expect(String(cur)).not.toContain(KEY);
    cur = (cur as { cause?: unknown }).cause;
  }
}

/** A real pino logger writing into memory, so tests can check what would have been logged. */
export function memoryLog(): { log: pino.Logger; lines: () => string } {
  let out = "";
  const sink = new Writable({
    write(chunk, _enc, cb) {
      out += String(chunk);
      cb();
    },
  });
  return { log: pino({ level: "debug" }, sink), lines: () => out };
}
