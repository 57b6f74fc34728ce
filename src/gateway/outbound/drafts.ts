import type { Logger } from "../../log.js";
import { errInfo } from "../../log.js";
import type { ReplyAddress } from "../../runtime/events.js";
import type { Adapter } from "../adapter.js";
import type { GatewayMetrics } from "../metrics.js";
import { chatKey } from "../keys.js";
import type { OutboundScheduler } from "./scheduler.js";
import { renderFellBack } from "./render-failure.js";
import { chunksOf } from "./send-chunk.js";
import { editDraft, postDraft } from "./sink-calls.js";
import type { SentLog } from "./sent-log.js";

export interface Draft {
  /** Set once the final reply takes over: no more streaming edits. */
  final?: boolean;
  messageId?: string;
  sending?: Promise<void>;
  text: string;
  shown: string;
  lastEdit: number;
  timer?: NodeJS.Timeout;
  /** A draft left by an earlier run of the same event (a stop, a crash), taken over rather than posted again. */
  adopted?: boolean;
}

/**
 * A draft starts this long after the delta that qualified it, and not at
 * all if the answer is complete by then: a quick answer (one that was only
 * slow to start, behind a busy database) goes out as one durable message.
 * A draft has no delivery record yet, so it is the one message a crash can
 * leave behind for the recovered reply to repeat.
 */
const DRAFT_GRACE_MS = 150;

/** Appended to a draft whose turn ended without its final reply. */
export const STOPPED_MARK = "\n\n(stopped)";

export interface DraftsOptions {
  metrics: GatewayMetrics;
  log: Logger;
  /** Stream a draft only when a turn is still producing text this long after it started. */
  streamAfterMs?: number;
  sentLog?: SentLog;
  /** The adapter and its scheduler for an address. */
  lookup(to: ReplyAddress): { adapter: Adapter; scheduler: OutboundScheduler } | undefined;
  /** Whether a chat still has replies queued: a draft must never overtake them. */
  chatBusy(chatKey: string): boolean;
}

/**
 * The streamed drafts of running turns: a draft is posted once a turn has
 * run a while, edited at the adapter's pace, taken over by the final reply
 * (`take`), or marked stopped when its turn ends without one (`ended`).
 */
export class Drafts {
  readonly #drafts = new Map<string, Draft>();
  readonly #turnStart = new Map<string, number>();

  constructor(private readonly opts: DraftsOptions) {}

  turnStarted(turnId: string): void {
    this.#turnStart.set(turnId, Date.now());
  }

  /** The final reply takes the draft over: no more streaming edits. Call `forget` once it is delivered. */
  take(turnId: string): Draft | undefined {
    const draft = this.#drafts.get(turnId);
    if (draft) {
      draft.final = true;
      if (draft.timer) clearTimeout(draft.timer);
    }
    return draft;
  }

  forget(turnId: string): void {
    const d = this.#drafts.get(turnId);
    if (d?.timer) clearTimeout(d.timer);
    this.#drafts.delete(turnId);
    this.#turnStart.delete(turnId);
  }

  /** The turn is over: a draft still showing a partial answer (stopped, fenced or failed) says so. */
  async ended(turnId: string, to: ReplyAddress): Promise<void> {
    const draft = this.#drafts.get(turnId);
    this.forget(turnId);
    if (draft && !draft.final) await this.#stopDraft(to, draft);
  }

  /**
   * A draft whose turn ended without a final reply (interrupted, fenced by
   * /new, failed) is finished with a visible "(stopped)" marker, so no
   * partial answer is left looking as if it were still being written.
   */
  async #stopDraft(to: ReplyAddress, draft: Draft): Promise<void> {
    draft.final = true;
    if (draft.timer) clearTimeout(draft.timer);
    await draft.sending;
    const a = this.opts.lookup(to);
    if (!a || !draft.messageId) return;
    const mid = draft.messageId;
    const room = a.adapter.limits.maxTextLength - STOPPED_MARK.length;
    // All the turn streamed, not only the last edit (which runs at the adapter's pace): a turn cut by /stop keeps
    // that text in its transcript, so the chat shows the same.
    const latest = this.#render(a.adapter, draft.text)?.[0] ?? draft.shown;
    const shown = latest.length > room ? `${latest.slice(0, Math.max(0, room - 1))}…` : latest;
    const text = `${shown}${STOPPED_MARK}`;
    try {
      await a.scheduler.schedule(chatKey(to), () => editDraft(a.adapter, to, mid, text), { label: "edit" });
      draft.shown = text;
      this.opts.metrics.outbound.inc({ platform: to.platform, call: "edit", outcome: "ok" });
    } catch (err) {
      this.opts.metrics.outbound.inc({ platform: to.platform, call: "edit", outcome: "error" });
      this.opts.log.warn({ platform: to.platform, err: errInfo(err) }, "could not mark a stopped draft as stopped; its partial text stays as it is");
    }
  }

  /** Streams a draft: sent once the turn has run a while, then edited at the adapter's pace. */
  async stream(turnId: string, to: ReplyAddress, text: string, inboundId?: string): Promise<void> {
    const a = this.opts.lookup(to);
    if (!a || !a.adapter.limits.canEdit) return;
    const started = this.#turnStart.get(turnId) ?? Date.now();
    let d = this.#drafts.get(turnId);
    // The event's draft from a run that never committed (the sent log keeps it): this run streams into it.
    const kept = !d && inboundId ? this.opts.sentLog?.draftOf(inboundId) : undefined;
    if (kept) {
      d = { text, shown: "", lastEdit: 0, messageId: kept, adopted: true };
      this.#drafts.set(turnId, d);
    } else if (!d) {
      if (Date.now() - started < (this.opts.streamAfterMs ?? 1000)) return;
      // A draft goes straight to the scheduler: it must not overtake this chat's earlier replies still queued. Try again at the next delta.
      if (this.opts.chatBusy(chatKey(to))) return;
      d = { text, shown: "", lastEdit: 0 };
      this.#drafts.set(turnId, d);
      const draft = d;
      draft.timer = setTimeout(() => {
        draft.timer = undefined;
        if (draft.final || this.opts.chatBusy(chatKey(to))) return;
        const chunks = this.#render(a.adapter, draft.text);
        if (!chunks) return;
        const first = chunks[0] ?? "…";
        draft.sending = a.scheduler
          .schedule(chatKey(to), () => postDraft(a.adapter, to, first), { essential: false, label: "draft" })
          .then((sent) => {
            if (sent) {
              draft.messageId = sent.messageId;
              draft.shown = first;
              draft.lastEdit = Date.now();
              // Remembered past a crash: the replayed turn's reply then takes this message over.
              if (inboundId) this.opts.sentLog?.recordDraft(inboundId, sent.messageId);
            }
          });
      }, DRAFT_GRACE_MS);
      draft.timer.unref?.();
      return;
    }
    d.text = text;
    if (d.timer) return;
    const interval = to.kind === "private" ? a.adapter.limits.editIntervalMs.private : a.adapter.limits.editIntervalMs.group;
    const draft = d;
    draft.timer = setTimeout(
      () => {
        draft.timer = undefined;
        if (draft.final) return;
        const next = this.#render(a.adapter, draft.text)?.[0] ?? "";
        if (!draft.messageId || next === draft.shown) return;
        void a.scheduler
          .schedule(chatKey(to), () => editDraft(a.adapter, to, draft.messageId!, next), { essential: false, label: "edit" })
          .then(() => {
            draft.shown = next;
            draft.lastEdit = Date.now();
          });
      },
      Math.max(0, interval - (Date.now() - draft.lastEdit)),
    );
    draft.timer.unref?.();
  }

  get size(): number {
    return this.#drafts.size;
  }

  get turnStarts(): number {
    return this.#turnStart.size;
  }

  /** A draft's chunks (see chunksOf); one that cannot be formatted at all is not shown: its final reply is failed and told. */
  #render(adapter: Adapter, text: string): string[] | undefined {
    const where = { platform: adapter.platform, chars: text.length };
    try {
      return chunksOf(adapter, text, undefined, (err) => renderFellBack(this.opts, where, err));
    } catch (err) {
      this.opts.metrics.outbound.inc({ platform: adapter.platform, call: "render", outcome: "failed" });
      this.opts.log.warn({ ...where, err: errInfo(err) }, "a streamed draft could not be formatted at all; it is not shown");
      return undefined;
    }
  }

  close(): void {
    for (const d of this.#drafts.values()) if (d.timer) clearTimeout(d.timer);
  }
}
