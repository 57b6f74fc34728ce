import { errInfo, type Logger } from "../../log.js";
import { StoreError } from "../../store/errors.js";

/** Waits between tries of a start-up read the store failed: about half a minute in all, then the start fails. */
const START_READ_BACKOFF_MS = [100, 250, 500, 1_000, 2_000, 4_000, 8_000, 16_000];

/**
 * A read the start needs (what the last run left unfinished), retried while the store fails, as the message
 * path retries: one failed read must not keep the gateway from starting. Past the backoff the start fails.
 */
export async function readAtStart<T>(what: string, read: () => Promise<T>, log: Logger, backoffMs: readonly number[] = START_READ_BACKOFF_MS): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await read();
    } catch (err) {
      const wait = backoffMs[attempt];
      if (wait === undefined || !(err instanceof StoreError)) throw err;
      log.warn({ what, attempt: attempt + 1, retryInMs: wait, err: errInfo(err) }, "a start-up read of the store failed; retrying");
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}
