import type { Logger } from "../log.js";
import type { OutEvent, OutKind } from "./events.js";

export type Sink = (sessionId: string, event: OutEvent) => void | Promise<void>;

interface Entry {
  kinds: ReadonlySet<OutKind> | null;
  fn: Sink;
}

/**
 * Fans out a session's events to the sinks that asked for their kind.
 * Adapters register sinks; a sink that throws or rejects is logged with
 * context and isolated, so the other sinks still run.
 */
export class SinkRouter {
  readonly #entries = new Set<Entry>();

  constructor(private readonly log?: Pick<Logger, "error">) {}

  /** Registers a sink for these kinds (empty: every kind). Returns an idempotent remover. */
  add(kinds: readonly OutKind[], fn: Sink): () => void {
    const entry: Entry = { kinds: kinds.length ? new Set(kinds) : null, fn };
    this.#entries.add(entry);
    return () => {
      this.#entries.delete(entry);
    };
  }

  get size(): number {
    return this.#entries.size;
  }

  /** Calls every matching sink; resolves once all have settled. Never rejects. */
  async deliver(sessionId: string, event: OutEvent): Promise<void> {
    const pending: Promise<void>[] = [];
    for (const e of this.#entries) {
      if (e.kinds && !e.kinds.has(event.kind)) continue;
      try {
        const r = e.fn(sessionId, event);
        if (r && typeof (r as Promise<void>).then === "function") pending.push((r as Promise<void>).catch((err) => this.#report(sessionId, event, err)));
      } catch (err) {
        this.#report(sessionId, event, err);
      }
    }
    if (pending.length) await Promise.all(pending);
  }

  #report(sessionId: string, event: OutEvent, err: unknown): void {
    this.log?.error(
      {
        sessionId,
        kind: event.kind,
        err: err instanceof Error ? { name: err.name, message: err.message, code: (err as { code?: unknown }).code } : String(err),
      },
      "a sink failed; the other sinks still ran",
    );
  }
}
