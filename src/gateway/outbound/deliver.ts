import type { Logger } from "../../log.js";
import { errInfo } from "../../log.js";
import type { ReplyAddress, Severity } from "../../runtime/events.js";
import type { DeliveryRecord, DeliveryStore } from "../../store/deliveries.js";
import type { Adapter } from "../adapter.js";
import { isAdapterError } from "../contract.js";
import type { GatewayMetrics } from "../metrics.js";
import type { Draft } from "./drafts.js";
import { findOne, readBack } from "./read-back.js";
import { failUnrenderable, renderFellBack } from "./render-failure.js";
import type { ChatLane } from "./scheduler.js";
import { chunksOf, RenderFailed } from "./send-chunk.js";
import { editChunk, sendChunk } from "./sink-calls.js";
import type { SentLog } from "./sent-log.js";

/** markSending found the reply no longer pending or sending: it was sent meanwhile, or another process took it. */
class ReplyTaken extends Error {}

/** What a reply's sending asks of the chunks already accepted: the sent log's part. */
type AcceptedChunks = Pick<SentLog, "sent" | "record" | "done">;

/**
 * Without a sent log (PostgreSQL), the chunks this process saw accepted, kept
 * until their reply is marked sent or given up: a reply retried here after a
 * failure half-way (a store fault marking the next chunk, the scheduler's
 * retries used up) sends only the chunks not yet accepted, never the first again.
 */
class AcceptedInMemory implements AcceptedChunks {
  /** Replies another process took over (shared mode) are never done here: the oldest go past this many. */
  static readonly MAX_REPLIES = 10_000;
  readonly #chunks = new Map<string, Map<number, string>>();
  sent(deliveryId: string, chunk: number): string | undefined {
    return this.#chunks.get(deliveryId)?.get(chunk);
  }
  record(deliveryId: string, chunk: number, messageId: string): void {
    const m = this.#chunks.get(deliveryId) ?? new Map<number, string>();
    m.set(chunk, messageId);
    this.#chunks.set(deliveryId, m);
    if (this.#chunks.size > AcceptedInMemory.MAX_REPLIES) this.#chunks.delete(this.#chunks.keys().next().value!);
  }
  done(deliveryId: string): void {
    this.#chunks.delete(deliveryId);
  }
}

/** A recorded reply's address, for replies recovered from the store (a live one comes with its event's address). */

export interface ReplySenderOptions {
  deliveries: DeliveryStore;
  metrics: GatewayMetrics;
  log: Logger;
  /** This process's id, recorded on the replies it is sending. */
  owner?: string;
  sentLog?: SentLog;
}

/** One reply being sent: where, through which adapter and its chat's lane, and what it may take over. */
interface Sending {
  adapter: Adapter;
  lane: ChatLane;
  rec: DeliveryRecord;
  to: ReplyAddress;
  draft: Draft | undefined;
  severity: Severity | undefined;
}

/**
 * Sends durable replies, each holding its chat's lane (the door queues it):
 * chunked at the adapter's limit, the first chunk quoting the user's
 * message, each chunk a call through the scheduler (which waits out 429s and
 * never drops). A streamed draft becomes the first chunk.
 */
export class ReplySender {
  readonly #inFlight = new Set<string>();
  readonly #accepted: AcceptedChunks;

  constructor(private readonly opts: ReplySenderOptions) {
    this.#accepted = opts.sentLog ?? new AcceptedInMemory();
  }

  has(id: string): boolean {
    return this.#inFlight.has(id);
  }

  get size(): number {
    return this.#inFlight.size;
  }

  /** A notice's `severity` is marked by the platform's format (a notice recovered after a restart is sent unmarked). */
  async deliver(adapter: Adapter, lane: ChatLane, rec: DeliveryRecord, to: ReplyAddress, draft?: Draft, severity?: Severity): Promise<void> {
    if (this.#inFlight.has(rec.id) || rec.status === "sent") return;
    if (rec.expiresAt.getTime() < Date.now()) {
      await this.opts.deliveries.markFailed(rec.id, "expired", "older than INBOUND_TTL");
      this.#accepted.done(rec.id);
      this.opts.metrics.expired.inc({ platform: rec.platform, what: "reply" });
      return;
    }
    this.#inFlight.add(rec.id);
    const s: Sending = { adapter, lane, rec, to, draft, severity };
    try {
      await this.#send(s);
      this.opts.metrics.outbound.inc({ platform: rec.platform, call: "send", outcome: "ok" });
    } catch (err) {
      await this.#failed(s, err);
    } finally {
      this.#inFlight.delete(rec.id);
    }
  }

  async #send(s: Sending): Promise<void> {
    const { rec, to } = s;
    // `sending` means "handed to the platform, answer not recorded": a process crashed, or a call failed, mid-send.
    const triedBefore = rec.status === "sending";
    const chunks = chunksOf(s.adapter, rec.text, s.severity, (err) =>
      renderFellBack(this.opts, { platform: rec.platform, deliveryId: rec.id, chars: rec.text.length }, err),
    );
    await s.draft?.sending;
    // A draft a previous process showed for this event (its turn never committed) becomes the reply's first chunk.
    const adopted = !s.draft && rec.inboundId && rec.part === 0 ? this.opts.sentLog?.draftOf(rec.inboundId) : undefined;
    if (adopted) s.draft = { messageId: adopted, text: "", shown: "", lastEdit: 0, final: true };
    const found = triedBefore ? await readBack(this.opts, s, rec, to, chunks.length, s.draft) : undefined;
    let firstId: string | undefined;
    for (const [i, chunk] of chunks.entries()) {
      if (i === 0 && s.draft?.messageId && (await this.#editDraft(s, s.draft.messageId, chunk, !!adopted || !!s.draft.adopted))) {
        firstId = s.draft.messageId;
        continue;
      }
      const logged = this.#accepted.sent(rec.id, i) ?? found?.get(`${rec.id}:${i}`)?.messageId;
      if (logged !== undefined) {
        firstId ??= logged; // accepted before a crash: not again
        continue;
      }
      const sent = await this.#sendChunk(s, i, chunk);
      firstId ??= sent.messageId;
    }
    await this.#markSent(rec, firstId);
    this.#accepted.done(rec.id);
    if (rec.inboundId && (adopted || s.draft?.messageId)) this.opts.sentLog?.forgetDraft(rec.inboundId);
  }

  /** The first chunk edited into the turn's draft; false when an adopted draft is gone (deleted in the chat): the chunk is posted instead. */
  async #editDraft(s: Sending, mid: string, chunk: string, adopted: boolean): Promise<boolean> {
    try {
      if (s.draft?.shown !== chunk) await s.lane.call(() => editChunk(s.adapter, s.to, mid, chunk), { label: "edit" });
      return true;
    } catch (err) {
      if (!adopted || !isAdapterError(err, "Rejected")) throw err;
      this.opts.log.warn(
        { deliveryId: s.rec.id, platform: s.rec.platform, err: errInfo(err) },
        "the draft left by a crash could not be edited; posting the reply as a new message",
      );
      return false;
    }
  }

  async #sendChunk(s: Sending, i: number, chunk: string) {
    const { rec } = s;
    const key = `${rec.id}:${i}`;
    const target = i === 0 ? s.to : { ...s.to, replyToMessageId: undefined };
    const log = this.#accepted;
    let attempt = 0;
    return s.lane.call(
      async () => {
        // The scheduler retries a failed call; the failed one may still have been posted (a timeout).
        const already = attempt++ > 0 ? await findOne(this.opts, s, rec, target, key) : undefined;
        // Marked `sending` (and the attempt counted) right before each platform call, not while the chunk
        // waits for a rate-limit token: after a crash, `sending` names exactly the replies that may have
        // reached the platform, and `attempts` how many times they were handed over.
        if (!already && !(await this.opts.deliveries.markSending(rec.id, this.opts.owner))) throw new ReplyTaken();
        const r = already ?? (await sendChunk(s.adapter, target, chunk, key, { onRefused: (why) => this.#refused(rec, why), severity: s.severity }));
        log.record(rec.id, i, r.messageId);
        return r;
      },
      { label: "send" },
    );
  }

  async #failed(s: Sending, err: unknown): Promise<void> {
    const { rec } = s;
    if (err instanceof ReplyTaken) return; // sent meanwhile, or taken over by another process
    if (err instanceof RenderFailed) return await failUnrenderable(this.opts, rec, s.to, s, err);
    this.opts.metrics.outbound.inc({ platform: rec.platform, call: "send", outcome: "error" });
    if (isAdapterError(err, "Rejected")) {
      await this.opts.deliveries.markFailed(rec.id, "failed", err.message);
      this.#accepted.done(rec.id);
      const workspace = rec.address.workspace;
      if (workspace !== undefined)
        this.opts.metrics.workspaceFailures.inc({ platform: rec.platform, workspace: this.opts.metrics.workspaceLabel(rec.platform, workspace) });
      this.opts.log.error({ deliveryId: rec.id, platform: rec.platform, err: errInfo(err) }, "the platform refused a reply; it will not be retried");
    } else {
      this.opts.log.warn({ deliveryId: rec.id, platform: rec.platform, err: errInfo(err) }, "a reply could not be sent yet; it stays queued and is retried");
    }
  }

  #refused(rec: DeliveryRecord, why: "too-long" | "bad-format"): void {
    this.opts.metrics.outbound.inc({ platform: rec.platform, call: "send", outcome: why === "too-long" ? "resplit" : "plain" });
    this.opts.log.warn(
      { deliveryId: rec.id, platform: rec.platform, reason: why },
      why === "too-long"
        ? "the platform refused a reply chunk as too long; it is split smaller and sent again"
        : "the platform could not parse a reply chunk's formatting; it is sent again as plain text",
    );
  }

  /**
   * The platform took the reply: marking it sent is retried (bounded by the
   * reply's expiry) while the store fails, and the reply stays in flight here
   * meanwhile, so it is never sent again from this process. Giving up leaves
   * it "sending", resent after a restart (where the sent log, on SQLite,
   * still stops that).
   */
  async #markSent(rec: DeliveryRecord, firstId: string | undefined): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.opts.deliveries.markSent(rec.id, firstId);
      } catch (err) {
        this.opts.metrics.internalErrors.inc({ where: "mark-sent" });
        if (Date.now() >= rec.expiresAt.getTime()) throw err;
        this.opts.log.warn(
          { deliveryId: rec.id, attempt, err: errInfo(err) },
          "a sent reply could not be marked sent; retrying (it is not sent again meanwhile)",
        );
        await new Promise<void>((r) => setTimeout(r, Math.min(2000, 50 * 2 ** Math.min(attempt - 1, 6))).unref?.());
      }
    }
  }
}
