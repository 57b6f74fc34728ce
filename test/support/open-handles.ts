/**
 * The unit project's guard against open handles (its setupFiles): a file must
 * close every server, socket, child process and ref'd timer it opened. With
 * `isolate: false` the next file in the worker would inherit them. Counted by
 * `process.getActiveResourcesInfo()` (what keeps the event loop alive) before
 * the file's first hook and after its last, with a few seconds to finish closing.
 */
import { afterAll, beforeAll, expect } from "vitest";

const SETTLE_MS = 5000;
let before = new Map<string, number>();

function census(): Map<string, number> {
  const m = new Map<string, number>();
  for (const r of process.getActiveResourcesInfo()) m.set(r, (m.get(r) ?? 0) + 1);
  return m;
}

function leftOpen(): string[] {
  const out: string[] = [];
  for (const [kind, n] of census()) if (n > (before.get(kind) ?? 0)) out.push(`${n - (before.get(kind) ?? 0)} ${kind}`);
  return out;
}

beforeAll(() => {
  before = census();
});

afterAll(async () => {
  const t0 = performance.now();
  let open = leftOpen();
  while (open.length > 0 && performance.now() - t0 < SETTLE_MS) {
    await new Promise((r) => setTimeout(r, 50).unref());
    open = leftOpen();
  }
  if (open.length > 0) {
    throw new Error(`${expect.getState().testPath} left open: ${open.join(", ")} (close what the file opens, in afterEach/afterAll)`);
  }
}, SETTLE_MS + 5000);
