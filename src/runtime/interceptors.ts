import type { InEvent, Severity } from "./events.js";
import type { LiveSession } from "./live-session.js";
import type { Runner } from "./runner.js";

export interface InterceptContext {
  readonly session: LiveSession;
  readonly runner: Runner;
  /** Adds a notice; it is delivered as a `notice` event with the event's reply address. */
  notify(severity: Severity, text: string): void;
}

/**
 * Return the event unchanged to pass it on, a different event to replace it
 * (the first replacement wins and ends the chain), or nothing to consume it.
 */
export type Interceptor = (event: InEvent, ctx: InterceptContext) => InEvent | null | undefined | void | Promise<InEvent | null | undefined | void>;

/** The interceptors every event passes through before it reaches a turn (commands live here). */
export class InterceptorChain {
  readonly #interceptors: Interceptor[] = [];

  /** Adds an interceptor at the end of the chain. Returns an idempotent remover. */
  register(interceptor: Interceptor): () => void {
    this.#interceptors.push(interceptor);
    return () => {
      const i = this.#interceptors.indexOf(interceptor);
      if (i >= 0) this.#interceptors.splice(i, 1);
    };
  }

  /** The event after the chain: passed on, replaced (the first replacement wins), or null when consumed. */
  async run(event: InEvent, ctx: InterceptContext): Promise<InEvent | null> {
    let ev: InEvent = event;
    for (const interceptor of [...this.#interceptors]) {
      const r: InEvent | null | undefined | void = await interceptor(ev, ctx);
      if (r === null || r === undefined) return null;
      if (r !== ev) return r;
      ev = r;
    }
    return ev;
  }
}
