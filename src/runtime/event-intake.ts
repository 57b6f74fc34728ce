import { SessionError, errors } from "../session/errors.js";
import { StoreError } from "../store/errors.js";
import { errInfo } from "../log.js";
import { KeyedQueue } from "../keyed-queue.js";
import type { InEvent, MessageEvent, Severity } from "./events.js";
import { commitNotices, type Notice, type NoticeCommit } from "./commit-notices.js";
import type { LiveSession } from "./live-session.js";
import { renderUserText, sourceIdOf } from "./pending.js";
import { userEntry } from "./speaker.js";
import { followed, sessionFor, type Whereabouts } from "./handoff.js";
import { capabilities } from "./capabilities.js";
import type { InterceptContext, InterceptorChain } from "./interceptors.js";
import type { TurnWorkers } from "./turn-workers.js";
import type { RunHandle, Runner } from "./runner.js";

/** The parts of the runner that only it holds, lent to its intake. */
export interface IntakeParts {
  where: Whereabouts;
  interceptors: InterceptorChain;
  workers: TurnWorkers;
  closed(): boolean;
}

/**
 * How the runner takes an event: it goes to the session its conversation is
 * on now, through the interceptor chain (commands answer here), and, if it is
 * a message to answer, to the turn workers under the busy policy.
 */
export class EventIntake {
  /** A session's events are taken one at a time, in the order they reached the runner. */
  readonly #queue = new KeyedQueue();

  constructor(
    private readonly runner: Runner,
    private readonly parts: IntakeParts,
  ) {}

  /** Queues `event` behind the session's earlier ones; settles once it is consumed or queued. */
  run(session: LiveSession, event: InEvent): Promise<RunHandle> {
    return this.#queue.run(session.id, () => this.#take(session, event));
  }

  async #take(session: LiveSession, incoming: InEvent): Promise<RunHandle> {
    const event: InEvent = incoming.boundSessionId ? incoming : { ...incoming, boundSessionId: session.id };
    // A message for a session its conversation has left (rotated, switched away from, or a closed copy) goes where the conversation is.
    const current = await sessionFor(this.parts.where, session, event);
    if (current !== session) return current.id === session.id ? this.#take(current, event) : this.runner.run(current, event);
    if (session.closed) throw errors.closed(`Session ${session.id}`);

    const notices: Array<{ severity: Severity; text: string }> = [];
    const ctx: InterceptContext = { session, can: capabilities(this.runner, session, event), notify: (severity, text) => notices.push({ severity, text }) };
    let ev: InEvent | null;
    try {
      ev = await this.parts.interceptors.run(event, ctx);
    } catch (err) {
      // The database being away is worth retrying (the event stays unhandled); anything else is answered.
      if (err instanceof StoreError) throw err;
      const text =
        err instanceof SessionError ? `${err.code}: ${err.message}` : "Sorry, that command failed. The operator can find the details in the gateway's log.";
      if (!(err instanceof SessionError)) this.runner.opts.log?.error({ sessionId: session.id, err: errInfo(err) }, "a command failed");
      return this.#consumed(await this.#follow(session), event, [...notices, { severity: "error", text }]);
    }
    // An interceptor may have handed the conversation to another session: replies go where it went.
    if (ev === null) return this.#consumed(await this.#follow(session), event, notices);
    if (notices.length) await this.#commitAndEmit(await this.#follow(session), event, [], 0, notices, false);
    return this.#accept(await this.#follow(session), ev);
  }

  async #follow(session: LiveSession): Promise<LiveSession> {
    return this.parts.closed() ? session : followed(this.parts.where, session);
  }

  async #consumed(session: LiveSession, event: InEvent, notices: Array<{ severity: Severity; text: string }>): Promise<RunHandle> {
    await this.#commitAndEmit(session, event, [], 0, notices, true);
    return { sessionId: session.id, accepted: "consumed", done: Promise.resolve("consumed") };
  }

  /** Commits notices (and marks the inbound handled when `final`), then emits them (see commit-notices.ts). */
  #commitAndEmit(
    session: LiveSession,
    event: InEvent,
    messages: NoticeCommit["messages"],
    turnIncrement: number,
    notices: Notice[],
    final: boolean,
  ): Promise<void> {
    return commitNotices(this.runner.ledger, session, event, { messages, turnIncrement, notices, final });
  }

  async #accept(session: LiveSession, ev: MessageEvent): Promise<RunHandle> {
    if (!ev.respond) {
      await this.#commitAndEmit(session, ev, [userEntry(ev, renderUserText(ev), sourceIdOf(ev))], 0, [], true);
      return { sessionId: session.id, accepted: "context", done: Promise.resolve("context") };
    }
    const { accepted, done } = this.parts.workers.accept(session, ev, this.runner.opts.busyPolicy ?? "queue");
    return { sessionId: session.id, accepted, done };
  }
}
