import type { Info } from "../session/info.js";
import type { MessageEvent, Severity } from "./events.js";
import type { LiveSession } from "./live-session.js";

/**
 * What middleware may do to its conversation beyond the session's own
 * settings: narrow capabilities over the conversation, never the whole
 * Runner (src/runtime/capabilities.ts builds them for each event).
 */
export interface ConversationCapabilities {
  /** This chat's sessions, most recent first (private: user + channel; group: the group). */
  sessions(limit?: number): Promise<Info[]>;
  /** With several processes on one database, re-reads the session's settings (commands that show them call this). */
  refresh(): Promise<void>;
  /** Resolves once what was sent before this command has been answered. */
  whenIdle(): Promise<void>;
  /**
   * /new: compare-and-rotate the conversation onto a fresh session (against
   * `expectedSessionId`), and move the conversation there. Throws
   * StaleRotation or RotationOutcomeUnknown as the registry does.
   */
  rotate(opts: {
    expectedSessionId: string;
    persona?: string;
    reason: "new" | "reset";
    /** `/agent <name>`: the fresh session's agent id (the binding keeps the routed agent's); default: the current session's agent. */
    agentId?: string;
  }): Promise<Info>;
  /** After RotationOutcomeUnknown: whether the rotation away from `expectedSessionId` happened. */
  verifyRotation(expectedSessionId: string): Promise<"Committed" | "NotExecuted" | "Uncertain">;
  /** Moves the conversation from `fromSessionId` to the session its binding points at now. */
  followBinding(fromSessionId: string): Promise<Info>;
  /**
   * /stop: aborts the session's running turn and drops its queued messages
   * (committed as handled, so a restart does not replay them).
   */
  stop(): { running: boolean; dropped: number };
  /**
   * /resume: binds the conversation to `targetSessionId` (one of this chat's,
   * else NotFound) and moves it there; `moved` is false when it was there already.
   */
  switchTo(targetSessionId: string): Promise<{ moved: boolean; session: Info }>;
}

export interface InterceptContext {
  /** The live session the event was taken into. */
  readonly session: LiveSession;
  readonly can: ConversationCapabilities;
  /** Adds a notice; it is delivered as a `notice` event with the event's reply address. */
  notify(severity: Severity, text: string): void;
}

/** Passes the event (or a changed one) on to the rest of the chain; resolves when the rest is done. */
export type Next = (event?: MessageEvent) => Promise<void>;

/**
 * Middleware (as in Koa or grammY): call `next()` to pass the event on,
 * `next(changed)` to pass a changed event on, or return without calling it
 * to consume the event. Await (or return) `next()`: the chain's outcome is
 * known only once every middleware has returned.
 */
export type Interceptor = (event: MessageEvent, ctx: InterceptContext, next: Next) => Promise<void> | void;

/** The middleware every event passes through before it reaches a turn (commands live here). */
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

  /** The event that came out of the end of the chain (as the last `next` passed it), or null when one consumed it. */
  async run(event: MessageEvent, ctx: InterceptContext): Promise<MessageEvent | null> {
    const chain = [...this.#interceptors];
    let out: MessageEvent | null = null;
    const at = async (i: number, ev: MessageEvent): Promise<void> => {
      const interceptor = chain[i];
      if (!interceptor) {
        out = ev;
        return;
      }
      let passed = false;
      await interceptor(ev, ctx, (changed = ev) => {
        if (passed) return Promise.reject(new Error("an interceptor called next() twice"));
        passed = true;
        return at(i + 1, changed);
      });
    };
    await at(0, event);
    return out;
  }
}
