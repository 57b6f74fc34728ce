import { SwitchboardError } from "../errors.js";
import { errInfo } from "../log.js";
import type { CommitResult, TurnRecord } from "./ledger.js";
import type { Runner } from "./runner.js";

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref?.());

/**
 * A turn's commit, retried with bounded backoff while the store fails (a
 * full disk, a lock held too long, a server restarting). The session's
 * worker stays busy meanwhile, so the conversation's later events wait
 * behind this one: order is kept. The ledger's commit is idempotent (an
 * attempt that did land answers "duplicate"), so retrying after a lost
 * acknowledgement answers nothing twice.
 *
 * It stops retrying when the event reaches its deadline (its INBOUND_TTL):
 * "unanswered", and the gateway tells the chat. While the runner closes it
 * gives up at once and rethrows: the event stays unhandled and is replayed
 * at the next start.
 */
export async function commitDurably(runner: Runner, rec: TurnRecord): Promise<CommitResult | "unanswered"> {
  const { opts } = runner;
  for (let attempt = 1; ; attempt++) {
    try {
      return await runner.ledger.commit(rec);
    } catch (err) {
      opts.onCommitError?.(err);
      const deadline = opts.commitDeadline?.(rec.inboundIds);
      if (deadline === undefined || runner.closed) throw err;
      const wait = Math.min(5000, 50 * 2 ** Math.min(attempt - 1, 10));
      if (Date.now() + wait >= deadline) {
        opts.log?.error(
          { sessionId: rec.sessionId, inboundIds: rec.inboundIds, attempts: attempt, err: errInfo(err) },
          "a turn could not be committed before its event's TTL; the chat is told to send it again",
        );
        return "unanswered";
      }
      opts.log?.[attempt >= 5 ? "error" : "warn"](
        { sessionId: rec.sessionId, inboundIds: rec.inboundIds, attempt, retryInMs: wait, err: errInfo(err) },
        "committing a turn failed; retrying (the conversation's later events wait)",
      );
      await sleep(wait);
    }
  }
}

/** Thrown by readDurably when the event's deadline passed: the turn ends "unanswered". */
export class Unanswered extends SwitchboardError<"Unanswered"> {
  override readonly name = "Unanswered";
  constructor(message: string, options?: { cause?: unknown }) {
    super("Unanswered", message, options);
  }
}

/**
 * A store read a turn needs before the agent runs (its transcript window,
 * its memories), retried like the commit: a read that fails is the store's
 * trouble, never an answer of "the agent failed" to the user.
 */
export async function readDurably<T>(runner: Runner, inboundIds: string[], signal: AbortSignal, read: () => Promise<T>): Promise<T> {
  const { opts } = runner;
  for (let attempt = 1; ; attempt++) {
    try {
      return await read();
    } catch (err) {
      opts.onCommitError?.(err);
      const deadline = opts.commitDeadline?.(inboundIds);
      if (deadline === undefined || runner.closed || signal.aborted) throw err;
      const wait = Math.min(5000, 50 * 2 ** Math.min(attempt - 1, 10));
      if (Date.now() + wait >= deadline) {
        opts.log?.error(
          { inboundIds, attempts: attempt, err: errInfo(err) },
          "a turn could not read its context from the store before its event's TTL; the chat is told to send it again",
        );
        throw new Unanswered("the store did not answer before the event's TTL", { cause: err });
      }
      opts.log?.[attempt >= 5 ? "error" : "warn"](
        { inboundIds, attempt, retryInMs: wait, err: errInfo(err) },
        "reading a turn's context failed; retrying (the conversation's later events wait)",
      );
      await sleep(wait);
    }
  }
}
