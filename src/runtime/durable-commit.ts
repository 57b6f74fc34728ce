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
        opts.log?.error({ sessionId: rec.sessionId, inboundIds: rec.inboundIds, attempts: attempt, err: errInfo(err) }, "a turn could not be committed before its event's TTL; the chat is told to send it again");
        return "unanswered";
      }
      opts.log?.[attempt >= 5 ? "error" : "warn"]({ sessionId: rec.sessionId, inboundIds: rec.inboundIds, attempt, retryInMs: wait, err: errInfo(err) }, "committing a turn failed; retrying (the conversation's later events wait)");
      await sleep(wait);
    }
  }
}
