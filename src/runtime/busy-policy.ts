import type { MessageEvent } from "./events.js";
import { mergeInto, newPending } from "./pending.js";
import type { TurnOutcome } from "./turn.js";
import type { TurnQueue } from "./turn-queue.js";

export type BusyPolicy = "queue" | "collect" | "interrupt";

/**
 * Where a message that needs an answer goes while its session may be busy:
 * `queue` waits behind the running turn, `collect` merges everything that
 * arrives during it into one follow-up turn, `interrupt` aborts the running
 * turn (`abort`) and goes first.
 */
export function admit(q: TurnQueue, ev: MessageEvent, policy: BusyPolicy, abort: () => void): { accepted: "queued" | "collected"; done: Promise<TurnOutcome> } {
  if (q.running && policy === "collect") {
    if (q.collected) mergeInto(q.collected, ev);
    else q.collected = newPending(ev);
    return { accepted: "collected", done: q.collected.done };
  }
  const pending = newPending(ev);
  if (q.running && policy === "interrupt") {
    q.queue.unshift(pending);
    abort();
  } else {
    q.queue.push(pending);
  }
  return { accepted: "queued", done: pending.done };
}
