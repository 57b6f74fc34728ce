import type { Logger } from "../../log.js";
import { errInfo } from "../../log.js";
import type { OutEvent, ReplyAddress, Severity } from "../../runtime/events.js";
import type { DeliveryRecord, DeliveryStore } from "../../store/deliveries.js";
import type { RateBudgetStore } from "../../store/rate-budgets.js";
import type { Adapter } from "../adapter.js";
import type { GatewayMetrics } from "../metrics.js";
import { ReplyClaims } from "./claims.js";
import { ReplySender } from "./deliver.js";
import { Drafts, type Draft } from "./drafts.js";
import type { OutboundItem, OutboundResult } from "./items.js";
import { chatKey } from "../keys.js";
import { SchedulerClosedError } from "./scheduler.js";
import type { SentLog } from "./sent-log.js";
import { canLeave, clearWait, editCard, leaveChat, sendLine, sendTyping, showCard } from "./sink-calls.js";
import { Ways } from "./ways.js";

export type { OutboundItem } from "./items.js";

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
  /** Shared mode: each bot's bot-wide budget is the database's, one for every process (bot-budget.ts). */
  budgets?: RateBudgetStore;
}

/**
 * The one door out: everything that leaves for a platform is an item
 * enqueued here (`enqueue`: replies by delivery id, cards and their edits,
 * fixed lines, typing, leaving a group), and the runtime's events come in
 * through `sink` (replies, notices, streamed drafts edited in place, typing).
 * Each item is queued in its chat's one queue, the adapter's
 * OutboundScheduler, which paces, orders and retries every platform call
 * (made in sink-calls.ts only).
 */
export class Outbound {
  /** The adapters, and the scheduler of each bot they speak as. */
  readonly #ways: Ways;
  readonly #drafts: Drafts;
  readonly #replies: ReplySender;
  /** Replies this process has taken on (queued behind their chat, or being sent): their claims are kept fresh in shared mode. */
  readonly #held: ReplyClaims;
  /** Replies queued per chat (drafts must not overtake them). */
  readonly #replying = new Map<string, number>();

  /** Held closed while the gateway starts, so replies recovered from before a restart go out before new ones. */
  #gate: Promise<void> | undefined;
  #openGate: (() => void) | undefined;

  constructor(readonly opts: OutboundOptions) {
    this.#ways = new Ways(opts);
    this.#drafts = new Drafts({ ...opts, lookup: (to) => this.#ways.for(to), chatBusy: (key) => this.#replying.has(key) });
    this.#held = new ReplyClaims(opts);
    this.#replies = new ReplySender(opts);
  }

  hold(): void {
    this.#gate = new Promise((r) => (this.#openGate = r));
  }

  release(): void {
    this.#openGate?.();
    this.#gate = undefined;
  }

  /** Queues every reply written but not confirmed sent, each behind its chat's earlier replies. */
  async queueUnsent(): Promise<number> {
    const rows = await this.opts.deliveries.unsent({ staleAfterMs: this.opts.staleAfterMs });
    for (const r of rows) void this.#held.holding(r.id, () => this.#inChat(r.address, async () => r));
    return rows.length;
  }

  add(adapter: Adapter): void {
    this.#ways.add(adapter);
  }

  /** Re-keys an adapter whose bot id became known at start; its scheduler (and what is queued there) stays. */
  rekey(adapter: Adapter): void {
    this.#ways.rekey(adapter);
  }

  /** Queue depth of every adapter, for /metrics. */
  updateGauges(): void {
    for (const { adapter, scheduler } of this.#ways.all()) this.opts.metrics.queueDepth.set({ platform: adapter.platform }, scheduler.pending());
  }

  /** The sink the gateway registers with the Runner. */
  sink = async (_sessionId: string, e: OutEvent): Promise<void> => {
    switch (e.kind) {
      case "lifecycle":
        if (e.phase === "turn-start" && e.detail?.turnId) this.#drafts.turnStarted(String(e.detail.turnId));
        return;
      case "typing":
        return this.enqueue({ kind: "typing", to: e.replyTo });
      case "text-delta":
        return this.#drafts.stream(e.turnId, e.replyTo, e.text, e.inboundId);
      case "text-final": {
        const { deliveryId, turnId } = e;
        // Take the draft now: turn-complete follows at once and forgets the turn.
        const draft = this.#drafts.take(turnId);
        if (deliveryId) await this.#reply(deliveryId, e.replyTo, draft);
        this.#drafts.forget(turnId);
        return;
      }
      case "notice":
        if (e.deliveryId && e.replyTo) await this.#reply(e.deliveryId, e.replyTo, undefined, e.severity);
        return;
      case "turn-complete":
        // Stopped, fenced or failed after part of the answer was shown: the draft says so.
        return this.#drafts.ended(e.turnId, e.replyTo);
      default:
        return;
    }
  };

  /**
   * Queues one item behind its chat's earlier ones (see OutboundItem for what
   * each resolves to). A reply never rejects for the platform's sake (it
   * stays queued, or is failed and logged); a card, a card's edit, a line or
   * a leave rejects with the platform's error once the scheduler gives up,
   * or SchedulerClosedError; typing never rejects.
   */
  async enqueue<I extends OutboundItem>(item: I): Promise<OutboundResult<I>>;
  async enqueue(item: OutboundItem): Promise<unknown> {
    if (item.kind === "reply") return this.#reply(item.deliveryId, item.to, undefined, item.severity);
    if (this.#gate) await this.#gate;
    const way = this.#ways.for(item.to);
    if (!way) {
      if (item.kind === "typing") return;
      throw new Error(`no adapter for ${item.to.platform}:${item.to.botId}; the ${item.kind} cannot be sent`);
    }
    const { adapter, scheduler } = way;
    const key = chatKey(item.to);
    switch (item.kind) {
      case "typing": {
        const r = await scheduler.schedule(key, () => sendTyping(adapter, item.to).then(() => true), { essential: false, label: "typing" });
        this.opts.metrics.outbound.inc({ platform: adapter.platform, call: "typing", outcome: r ? "ok" : "skipped" });
        return;
      }
      case "card":
        return scheduler.hold(key, (lane) => showCard(lane, adapter, item.to, item.card)).catch((err: unknown) => this.#cardNotShown(item, err));
      case "card-edit":
        return scheduler.hold(key, (lane) => editCard(lane, adapter, item.to, item.messageId, item.card));
      case "line":
        await scheduler.schedule(key, () => sendLine(adapter, item.to, item.text, { ...(item.severity && { severity: item.severity }) }), { label: "line" });
        return;
      case "leave":
        if (!canLeave(adapter)) return false;
        return scheduler.schedule(key, () => leaveChat(adapter, item.chatId), { label: "leave" });
      case "unanswered":
        if (!adapter.sink.unanswered) return;
        await scheduler.schedule(key, () => clearWait(adapter, item.to), { label: "unanswered" });
        return;
    }
  }

  /**
   * A card the platform would not show (refused, or still failing after the
   * retries): the chat is told in a line, where one can still be sent (not
   * once the scheduler is closed), and the error goes back to the approval,
   * which denies the call.
   */
  async #cardNotShown(item: Extract<OutboundItem, { kind: "card" }>, err: unknown): Promise<never> {
    const where = { approvalId: item.card.id, platform: item.to.platform, err: errInfo(err) };
    // Logged with the denial by the approval, which gets the error.
    this.opts.metrics.outbound.inc({ platform: item.to.platform, call: "card", outcome: "error" });
    if (!(err instanceof SchedulerClosedError)) {
      const text = `The approval card for the tool ${item.card.tool} (${item.card.id}) could not be shown here, so the call was denied.`;
      await this.enqueue({ kind: "line", to: item.to, text, severity: "error" }).catch((again: unknown) => {
        this.opts.metrics.internalErrors.inc({ where: "approval-card-notice" });
        this.opts.log.error({ ...where, err: errInfo(again) }, "the notice that an approval card could not be shown could not be sent either");
      });
    }
    throw err;
  }

  /** The reply `id`, held (its claim kept fresh) while it waits; `to` is its address as its event carried it, else its record's. */
  async #reply(id: string, to: ReplyAddress | undefined, draft?: Draft, severity?: Severity): Promise<void> {
    await this.#held.holding(id, async () => {
      if (to) return this.#inChat(to, () => this.opts.deliveries.take(id), draft, severity);
      const rec = await this.opts.deliveries.take(id);
      if (rec) await this.#inChat(rec.address, async () => rec, undefined, severity);
    });
  }

  /** Sends one reply holding its chat (after the start-up gate); `load` reads its record once the chat's earlier work is done. */
  async #inChat(to: ReplyAddress, load: () => Promise<DeliveryRecord | null>, draft?: Draft, severity?: Severity): Promise<void> {
    const key = chatKey(to);
    this.#replying.set(key, (this.#replying.get(key) ?? 0) + 1);
    try {
      // Awaited only while it is shut: an open door queues the reply at once, in the order it was enqueued.
      if (this.#gate) await this.#gate;
      const way = this.#ways.for(to);
      if (!way) {
        const rec = await load();
        if (rec && rec.status !== "sent") this.opts.log.warn({ deliveryId: rec.id, platform: rec.platform }, "no adapter for this reply yet; it stays pending");
        return;
      }
      await way.scheduler.hold(key, async (lane) => {
        const rec = await load();
        if (rec) await this.#replies.deliver(way.adapter, lane, rec, to, draft, severity);
      });
    } finally {
      const n = this.#replying.get(key)! - 1;
      if (n > 0) this.#replying.set(key, n);
      else this.#replying.delete(key);
    }
  }

  /** Sizes of the per-chat and per-turn state, for tests and diagnostics. */
  stats(): { drafts: number; turnStart: number; chains: number; inFlight: number; held: number } {
    return { drafts: this.#drafts.size, turnStart: this.#drafts.turnStarts, chains: this.#replying.size, inFlight: this.#replies.size, held: this.#held.size };
  }

  /** Shared mode: keeps the claims of every reply this process holds fresh (see claims.ts). */
  startClaims(): void {
    this.#held.start();
  }

  stopClaims(): void {
    this.#held.stop();
  }

  /** Sends every reply written but not confirmed sent (at start, and periodically), each in its chat's order. */
  async flushUnsent(): Promise<number> {
    const rows = await this.opts.deliveries.unsent({ staleAfterMs: this.opts.staleAfterMs ?? 5_000 });
    let n = 0;
    for (const r of rows) {
      if (this.#replies.has(r.id) || this.#held.has(r.id)) continue;
      await this.#inChat(r.address, async () => r);
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
    const busy = () => this.#held.size + this.#replies.size + [...this.#ways.all()].reduce((n, a) => n + a.scheduler.pending(), 0);
    await new Promise((r) => setImmediate(r));
    while (busy() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, Math.min(25, Math.max(1, deadline - Date.now()))));
    return this.#held.size + this.#replies.size;
  }

  /** Waits until every adapter's queued calls are done. */
  async drain(): Promise<void> {
    await Promise.all([...this.#ways.all()].map((a) => a.scheduler.drain()));
  }

  close(): void {
    this.stopClaims();
    this.#drafts.close();
    for (const a of this.#ways.all()) a.scheduler.close();
    this.opts.sentLog?.close();
  }
}
