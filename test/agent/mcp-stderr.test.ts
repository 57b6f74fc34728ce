/**
 * A stdio MCP server's stderr in the log (src/agent/mcp/stderr-log.ts): lines
 * as they come (split across chunks, UTF-8 split across chunks, cut to 500
 * characters), at most the budget per window, and the count of the rest said
 * when the window ends (fake timers: only Date and the timer are faked) or the
 * server's stderr ends.
 */
import { afterEach, expect, it, vi } from "vitest";
import { StderrLog } from "../../src/agent/mcp/stderr-log.js";

afterEach(() => {
  vi.useRealTimers();
});

function recorder() {
  const lines: Array<{ obj: Record<string, unknown>; msg?: string }> = [];
  const push = (obj: Record<string, unknown>, msg?: string) => void lines.push({ obj, msg });
  return { lines, log: { debug: push, info: push, warn: push, error: push } };
}

it("splits lines across chunks, keeps UTF-8 whole, cuts a long line, skips blank ones", () => {
  const { lines, log } = recorder();
  const sink = new StderrLog("s", log, { lines: 100, windowMs: 60_000 }).sink();
  const euro = Buffer.from("€");
  sink.write(Buffer.concat([Buffer.from("first par"), euro.subarray(0, 1)]));
  sink.write(Buffer.concat([euro.subarray(1), Buffer.from("t\r\n\n   \nsecond\n")]));
  sink.write(Buffer.from("x".repeat(100_000)));
  sink.write(Buffer.from(`${"y".repeat(100_000)}\nno newline at the end`));
  sink.end();
  expect(lines.map((l) => l.obj.stderr)).toEqual(["first par€t", "second", "x".repeat(500), "no newline at the end"]);
});

it("past the budget, lines are counted; the count is said when the window ends, then a new window logs again", async () => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"], now: Date.parse("2026-03-01T09:00:00Z") });
  const { lines, log } = recorder();
  const stderr = new StderrLog("s", log, { lines: 3, windowMs: 10_000 });
  const sink = stderr.sink();
  sink.write(Buffer.from(Array.from({ length: 10 }, (_, i) => `line ${i}\n`).join("")));
  expect(lines.map((l) => l.obj.stderr)).toEqual(["line 0", "line 1", "line 2"]);
  await vi.advanceTimersByTimeAsync(9_999);
  expect(lines).toHaveLength(3);
  await vi.advanceTimersByTimeAsync(1);
  expect(lines).toHaveLength(4);
  expect(lines[3]!.obj).toMatchObject({ server: "s", dropped: 7, limit: 3, windowMs: 10_000 });
  // A new window: the budget again, and a count when the stderr ends mid-window.
  sink.write(Buffer.from("a\nb\nc\nd\ne\n"));
  sink.end();
  expect(lines.slice(4).map((l) => l.obj.stderr ?? `dropped ${l.obj.dropped}`)).toEqual(["a", "b", "c", "dropped 2"]);
  // The budget is the server's, across its restarts (a new sink per run).
  const again = stderr.sink();
  again.write(Buffer.from("f\n"));
  expect(lines).toHaveLength(8);
  again.end();
  expect(lines.at(-1)!.obj).toMatchObject({ dropped: 1 });
});
