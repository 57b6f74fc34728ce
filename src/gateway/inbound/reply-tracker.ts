import type { Logger } from "../../log.js";
import { errInfo } from "../../log.js";
import type { Runner } from "../../runtime/runner.js";
import type { DeliveryStore } from "../../store/deliveries.js";

/**
 * Shared mode: how long a conversation's lease is held, at most, waiting for
 * its replies to leave (as long as another process waits before taking over
 * replies abandoned by a crashed one).
 */
const FLUSH_WAIT_MS = 30_000;
/** Events whose replies are tracked until their conversation's lease is released. */
const REPLIES_TRACKED = 50_000;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Shared mode: the replies (delivery ids) each taken event produced, so a
 * conversation moves to another process only once they have left this
 * process's outbound queue (each process orders a chat's replies in its own
 * queue; the next process's replies must not overtake them).
 */
export class ReplyTracker {
  readonly #repliesOf = new Map<string, string[]>();

  constructor(
    runner: Runner,
    private readonly deliveries: DeliveryStore,
    private readonly log: Logger,
    private readonly stopping: () => boolean,
    /** Counts an error caught here (switchboard_internal_errors_total). */
    private readonly onError: (where: string) => void = () => undefined,
  ) {
    runner.withSink(["text-final", "notice"], (_id, e) => {
      if ((e.kind !== "text-final" && e.kind !== "notice") || !e.inboundId || !e.deliveryId) return;
      const list = this.#repliesOf.get(e.inboundId);
      if (list) list.push(e.deliveryId);
      else this.#repliesOf.set(e.inboundId, [e.deliveryId]);
      // Bounded: an event whose drain failed before its flush is forgotten eventually.
      if (this.#repliesOf.size > REPLIES_TRACKED) this.#repliesOf.delete(this.#repliesOf.keys().next().value!);
    });
  }

  /**
   * Settles once the replies to these events are no longer waiting in this
   * process's outbound queue (sent, refused or expired), or after
   * FLUSH_WAIT_MS. The queue sends a chat's replies in order, so the last one
   * leaving means every earlier one has been tried. Never rejects.
   */
  async flushed(inboundIds: string[]): Promise<void> {
    const ids = inboundIds.flatMap((id) => {
      const d = this.#repliesOf.get(id) ?? [];
      this.#repliesOf.delete(id);
      return d;
    });
    const last = ids.at(-1);
    if (!last) return;
    // The delivery record's status is the truth every process shares (the outbound queue has no per-reply signal).
    const end = Date.now() + FLUSH_WAIT_MS;
    for (let wait = 10; ; wait = Math.min(wait * 2, 200)) {
      try {
        const rec = await this.deliveries.find(last);
        if (!rec || (rec.status !== "pending" && rec.status !== "sending")) return;
      } catch (err) {
        this.onError("reply-flush-check");
        this.log.error(
          { err: errInfo(err) },
          "could not tell whether a conversation's replies were sent; releasing it anyway (its next replies could overtake them)",
        );
        return;
      }
      if (Date.now() >= end || this.stopping()) return;
      await sleep(wait);
    }
  }
}
