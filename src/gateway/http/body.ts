import type { IncomingMessage } from "node:http";

/**
 * Request bodies are read before anyone is authenticated (a Slack signature
 * covers the bytes), so what they may cost is bounded here, while they
 * stream: each route has a byte limit, and all bodies being read share one
 * budget. When the budget is full the request holding the most buffered
 * bytes is refused, not the newcomer: a genuine webhook is a few KB and is
 * read in milliseconds, so it is never the largest, while a slow attacker
 * trickling a big body always ends up being one.
 */
export class BodyBudget {
  #used = 0;
  readonly #holders = new Set<Holder>();

  constructor(readonly capBytes: number) {}

  get usedBytes(): number {
    return this.#used;
  }

  /** A reader's share; `evict` is called when a newcomer needs the room. */
  open(evict: () => void): Holder {
    const h: Holder = { bytes: 0, evict };
    this.#holders.add(h);
    return h;
  }

  /** Accounts n more bytes to h. False when h itself must give up (it is the largest). */
  take(h: Holder, n: number): boolean {
    while (this.#used + n > this.capBytes) {
      let largest: Holder | undefined;
      for (const x of this.#holders) if (!largest || x.bytes > largest.bytes) largest = x;
      // h, grown by n, would itself be the largest: it is the one to refuse.
      if (!largest || largest === h || largest.bytes <= h.bytes + n) return false;
      this.release(largest);
      largest.evict();
    }
    h.bytes += n;
    this.#used += n;
    return true;
  }

  release(h: Holder): void {
    if (!this.#holders.delete(h)) return;
    this.#used -= h.bytes;
    h.bytes = 0;
  }
}

interface Holder {
  bytes: number;
  evict: () => void;
}

export type BodyResult =
  | { ok: true; body: Buffer }
  /** too-large: over the route's limit; busy: the shared budget is full; aborted: the client went away. */
  | { ok: false; reason: "too-large" | "busy" | "aborted"; received: number };

/**
 * Reads the body, counting bytes as they arrive, and stops at the first
 * byte over `limit`. A refused body is not read further here; the rest is
 * drained (discarded, bounded in time) after the answer is sent, so the
 * client reads the 413 instead of a reset.
 */
export function readBody(incoming: IncomingMessage, limit: number, budget: BodyBudget): Promise<BodyResult> {
  const declared = Number(incoming.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limit) return Promise.resolve({ ok: false, reason: "too-large", received: 0 });
  if (incoming.readableEnded) return Promise.resolve({ ok: true, body: Buffer.alloc(0) });
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const finish = (r: BodyResult) => {
      if (settled) return;
      settled = true;
      incoming.off("data", onData);
      incoming.off("end", onEnd);
      incoming.off("error", onGone);
      incoming.off("close", onGone);
      budget.release(holder);
      chunks.length = 0;
      resolve(r);
    };
    const holder = budget.open(() => finish({ ok: false, reason: "busy", received: size }));
    const onData = (c: Buffer) => {
      size += c.length;
      if (size > limit) return finish({ ok: false, reason: "too-large", received: size });
      if (!budget.take(holder, c.length)) return finish({ ok: false, reason: "busy", received: size });
      // A copy: a small read can be a view of a much larger socket buffer, which would stay alive with it.
      chunks.push(Buffer.from(c));
    };
    const onEnd = () => {
      const body = Buffer.concat(chunks, size);
      finish({ ok: true, body });
    };
    const onGone = () => finish({ ok: false, reason: "aborted", received: size });
    incoming.on("data", onData);
    incoming.on("end", onEnd);
    incoming.on("error", onGone);
    incoming.on("close", onGone);
  });
}
