import type { Logger } from "../../log.js";
import type { OutEvent, ReplyAddress, Severity } from "../../runtime/events.js";
import { errInfo } from "../../log.js";
import type { DeliveryRecord, DeliveryStore } from "../../store/deliveries.js";
import type { Adapter } from "../adapter.js";
import { isAdapterError } from "../contract.js";
import type { GatewayMetrics } from "../metrics.js";
import { ReplyClaims } from "./claims.js";
import { Drafts, type Draft } from "./drafts.js";
import { KeyedQueue } from "../../keyed-queue.js";
import { adapterKey, chatKey } from "../keys.js";
import { findOne, readBack } from "./read-back.js";
import { OutboundScheduler } from "./scheduler.js";
import { failUnrenderable, renderFellBack } from "./render-failure.js";
import { chunksOf, editChunk, RenderFailed, sendChunk } from "./send-chunk.js";
import type { SentLog } from "./sent-log.js";

export { adapterKey, chatKey } from "../keys.js";
export { chunksOf, sendChunk } from "./send-chunk.js";
export { STOPPED_MARK } from "./drafts.js";

/** markSending found the reply no longer pending or sending: it was sent meanwhile, or another process took it. */
class ReplyTaken extends Error {}

export interface OutboundOptions {
  deliveries: DeliveryStore;
  metrics: GatewayMetrics;
  log: Logger;
  /** Stream a draft only when a turn is still producing text this long after it started. */
  streamAfterMs?: number;
  /** This process's id, recorded on the replies it is sending. */
  owner?: string;
  /** Several processes: recovery only takes replies abandoned this long. */
  staleAfterMs?: number;
  /** Chunks accepted by the platform, recorded before the database hears of it (see sent-log.ts). */
  sentLog?: SentLog;
}

/**
 * Everything that leaves for a platform: durable replies (by delivery id),
 * streamed drafts edited in place, and typing. Every platform call goes
 * through the adapter's OutboundScheduler, the one place that paces and
 * retries them.
 */
export class Outbound {
  readonly #adapters = new Map<string, { adapter: Adapter; scheduler: OutboundScheduler }>();
  readonly #drafts: Drafts;
  readonly #inFlight = new Set<string>();
  /** Replies this process has taken on (queued behind their chat, or being sent): their claims are kept fresh in shared mode. */
  readonly #held: ReplyClaims;
  /** Replies to one chat are delivered in the order they were emitted. */
  readonly #chats = new KeyedQueue();

  /** Held closed while the gateway starts, so replies recovered from before a restart go out before new ones. */
  #gate: Promise<void> = Promise.resolve();
  #openGate: (() => void) | undefined;

  constructor(readonly opts: OutboundOptions) {
    this.#drafts = new Drafts({ ...opts, lookup: (to) => this.#for(to), chatBusy: (key) => this.#chats.busy(key) });
    this.#held = new ReplyClaims(opts);
  }

  hold(): void {
    this.#gate = new Promise((r) => (this.#openGate = r));
  }

  release(): void {
    this.#openGate?.();
  }

  /** Queues every reply written but not confirmed sent, each behind its chat's earlier replies. */
  async queueUnsent(): Promise<number> {
    const rows = await this.opts.deliveries.unsent({ staleAfterMs: this.opts.staleAfterMs });
    for (const r of rows) {
      const to = r.address;
      void this.#held.holding(r.id, () => this.#inOrder(chatKey(to), () => this.deliver(r, to)));
    }
    return rows.length;
  }

  add(adapter: Adapter): void {
    const scheduler = new OutboundScheduler({
      limits: { perChat: adapter.limits.perChat, global: adapter.limits.global },
      log: this.opts.log,
      onRateLimited: () => this.opts.metrics.rateLimited.inc({ platform: adapter.platform }),
    });
    this.#adapters.set(adapterKey(adapter.platform, adapter.botId), { adapter, scheduler });
  }

  /** Re-keys an adapter whose bot id became known at start. */
  rekey(adapter: Adapter): void {
    for (const [k, v] of this.#adapters) if (v.adapter === adapter) this.#adapters.delete(k);
    this.add(adapter);
  }

  #for(a: { platform: string; botId: string }) {
    return this.#adapters.get(adapterKey(a.platform, a.botId));
  }

  /** Queue depth of every adapter, for /metrics. */
  updateGauges(): void {
    for (const { adapter, scheduler } of this.#adapters.values()) this.opts.metrics.queueDepth.set({ platform: adapter.platform }, scheduler.pending());
  }

  /** The sink the gateway registers with the Runner. */
  sink = async (_sessionId: string, e: OutEvent): Promise<void> => {
    switch (e.kind) {
      case "lifecycle":
        if (e.phase === "turn-start" && e.detail?.turnId) this.#drafts.turnStarted(String(e.detail.turnId));
        return;
      case "typing":
        return this.typing(e.replyTo);
      case "text-delta":
        return this.#drafts.stream(e.turnId, e.replyTo, e.text, e.inboundId);
      case "text-final": {
        const { deliveryId, turnId } = e;
        // Take the draft now: turn-complete follows at once and forgets the turn.
        const draft = this.#drafts.take(turnId);
        if (deliveryId) await this.#held.holding(deliveryId, () => this.#inOrder(chatKey(e.replyTo), () => this.deliverId(deliveryId, e.replyTo, draft)));
        this.#drafts.forget(turnId);
        return;
      }
      case "notice": {
        const { deliveryId } = e;
        if (deliveryId && e.replyTo)
          await this.#held.holding(deliveryId, () => this.#inOrder(chatKey(e.replyTo!), () => this.deliverId(deliveryId, e.replyTo, undefined, e.severity)));
        return;
      }
      case "turn-complete": {
        // Stopped, fenced or failed after part of the answer was shown: the draft says so.
        await this.#drafts.ended(e.turnId, e.replyTo);
        return;
      }
      default:
        return;
    }
  };

  #inOrder(key: string, fn: () => Promise<void>): Promise<void> {
    return this.#chats.run(key, fn, this.#gate);
  }

  /** Sizes of the per-chat and per-turn state, for tests and diagnostics. */
  stats(): { drafts: number; turnStart: number; chains: number; inFlight: number; held: number } {
    return { drafts: this.#drafts.size, turnStart: this.#drafts.turnStarts, chains: this.#chats.size, inFlight: this.#inFlight.size, held: this.#held.size };
  }

  async typing(to: ReplyAddress): Promise<void> {
    const a = this.#for(to);
    if (!a) return;
    const r = await a.scheduler.schedule(chatKey(to), () => a.adapter.sink.typing(to).then(() => true), { essential: false, label: "typing" });
    this.opts.metrics.outbound.inc({ platform: to.platform, call: "typing", outcome: r ? "ok" : "skipped" });
  }

  /**
   * Sends the reply `id`; `to` is its address as the event that made it carried it (else read back from its record).
   * A notice's `severity` is marked by the platform's format (a notice recovered after a restart is sent unmarked).
   */
  async deliverId(id: string, to?: ReplyAddress, draft?: Draft, severity?: Severity): Promise<void> {
    const rec = await this.opts.deliveries.take(id);
    if (rec) await this.deliver(rec, to, draft, severity);
  }

  /** Shared mode: keeps the claims of every reply this process holds fresh (see claims.ts). */
  startClaims(): void {
    this.#held.start();
  }

  stopClaims(): void {
    this.#held.stop();
  }

  /**
   * Sends one durable reply: chunked at the adapter's limit, the first chunk
   * quoting the user's message, each chunk through the scheduler (which
   * waits out 429s and never drops). A streamed draft becomes the first chunk.
   */
  async deliver(rec: DeliveryRecord, address?: ReplyAddress, draft?: Draft, severity?: Severity): Promise<void> {
    if (this.#inFlight.has(rec.id) || rec.status === "sent") return;
    const a = this.#for(rec);
    if (!a) {
      this.opts.log.warn({ deliveryId: rec.id, platform: rec.platform }, "no adapter for this reply yet; it stays pending");
      return;
    }
    if (rec.expiresAt.getTime() < Date.now()) {
      await this.opts.deliveries.markFailed(rec.id, "expired", "older than INBOUND_TTL");
      this.opts.metrics.expired.inc({ platform: rec.platform, what: "reply" });
      return;
    }
    this.#inFlight.add(rec.id);
    try {
      // `sending` means "handed to the platform, answer not recorded": a process crashed, or a call failed, mid-send.
      const triedBefore = rec.status === "sending";
      const to = address ?? rec.address;
      const chunks = chunksOf(a.adapter, rec.text, severity, (err) =>
        renderFellBack(this.opts, { platform: rec.platform, deliveryId: rec.id, chars: rec.text.length }, err),
      );
      await draft?.sending;
      // A draft a previous process showed for this event (its turn never committed) becomes the reply's first chunk.
      const adopted = !draft && rec.inboundId && rec.part === 0 ? this.opts.sentLog?.draftOf(rec.inboundId) : undefined;
      if (adopted) draft = { messageId: adopted, text: "", shown: "", lastEdit: 0, final: true };
      const found = triedBefore ? await readBack(this.opts, a, rec, to, chunks.length, draft) : undefined;
      // Marked `sending` (and the attempt counted) right before each platform call, not while the chunk
      // waits for a rate-limit token: after a crash, `sending` names exactly the replies that may have
      // reached the platform, and `attempts` how many times they were handed over.
      const handOver = async () => {
        if (!(await this.opts.deliveries.markSending(rec.id, this.opts.owner))) throw new ReplyTaken();
      };
      let firstId: string | undefined;
      for (const [i, chunk] of chunks.entries()) {
        if (i === 0 && draft?.messageId) {
          const mid = draft.messageId;
          try {
            if (draft.shown !== chunk) await a.scheduler.schedule(chatKey(to), () => editChunk(a.adapter, to, mid, chunk), { label: "edit" });
            firstId = mid;
            continue;
          } catch (err) {
            // The adopted draft is gone (deleted in the chat): post the chunk instead.
            if (!adopted || !isAdapterError(err, "Rejected")) throw err;
            this.opts.log.warn(
              { deliveryId: rec.id, platform: rec.platform, err: errInfo(err) },
              "the draft left by a crash could not be edited; posting the reply as a new message",
            );
          }
        }
        const key = `${rec.id}:${i}`;
        const logged = this.opts.sentLog?.sent(rec.id, i) ?? found?.get(key)?.messageId;
        if (logged !== undefined) {
          firstId ??= logged; // accepted before a crash: not again
          continue;
        }
        const target = i === 0 ? to : { ...to, replyToMessageId: undefined };
        const log = this.opts.sentLog;
        let attempt = 0;
        const sent = await a.scheduler.schedule(
          chatKey(to),
          async () => {
            // The scheduler retries a failed call; the failed one may still have been posted (a timeout).
            const already = attempt++ > 0 ? await findOne(this.opts, a, rec, target, key) : undefined;
            if (!already) await handOver();
            const r = already ?? (await sendChunk(a.adapter, target, chunk, key, { onRefused: (why) => this.#refused(rec, why), severity }));
            log?.record(rec.id, i, r.messageId);
            return r;
          },
          { label: "send" },
        );
        firstId ??= sent?.messageId;
      }
      await this.#markSent(rec, firstId);
      this.opts.sentLog?.done(rec.id);
      if (rec.inboundId && (adopted || draft?.messageId)) this.opts.sentLog?.forgetDraft(rec.inboundId);
      this.opts.metrics.outbound.inc({ platform: rec.platform, call: "send", outcome: "ok" });
    } catch (err) {
      if (err instanceof ReplyTaken) return; // sent meanwhile, or taken over by another process
      if (err instanceof RenderFailed) return await failUnrenderable(this.opts, rec, address ?? rec.address, a, err);
      this.opts.metrics.outbound.inc({ platform: rec.platform, call: "send", outcome: "error" });
      if (isAdapterError(err, "Rejected")) {
        await this.opts.deliveries.markFailed(rec.id, "failed", err.message);
        this.opts.log.error({ deliveryId: rec.id, platform: rec.platform, err: errInfo(err) }, "the platform refused a reply; it will not be retried");
      } else {
        this.opts.log.warn({ deliveryId: rec.id, platform: rec.platform, err: errInfo(err) }, "a reply could not be sent yet; it stays queued and is retried");
      }
    } finally {
      this.#inFlight.delete(rec.id);
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

  /** Sends every reply written but not confirmed sent (at start, and periodically). */
  async flushUnsent(): Promise<number> {
    const rows = await this.opts.deliveries.unsent({ staleAfterMs: this.opts.staleAfterMs ?? 5_000 });
    let n = 0;
    for (const r of rows) {
      if (this.#inFlight.has(r.id) || this.#held.has(r.id)) continue;
      await this.deliver(r);
      n++;
    }
    return n;
  }

  /**
   * Waits, at most `ms`, until no reply is queued or being sent. Resolves
   * with how many are still unfinished: they stay in the database and go
   * out at the next start.
   */
  async settle(ms: number): Promise<number> {
    const deadline = Date.now() + ms;
    const busy = () => this.#held.size + this.#inFlight.size + [...this.#adapters.values()].reduce((n, a) => n + a.scheduler.pending(), 0);
    await new Promise((r) => setImmediate(r));
    while (busy() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, Math.min(25, Math.max(1, deadline - Date.now()))));
    return this.#held.size + this.#inFlight.size;
  }

  /** Waits until every adapter's queued calls are done. */
  async drain(): Promise<void> {
    await Promise.all([...this.#adapters.values()].map((a) => a.scheduler.drain()));
  }

  close(): void {
    this.stopClaims();
    this.#drafts.close();
    for (const a of this.#adapters.values()) a.scheduler.close();
    this.opts.sentLog?.close();
  }
}
