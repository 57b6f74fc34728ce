import type { Logger } from "../../log.js";
import type { OutEvent, ReplyAddress } from "../../runtime/events.js";
import { errInfo } from "../../log.js";
import type { DeliveryRecord, DeliveryStore } from "../../store/deliveries.js";
import type { Adapter } from "../adapter.js";
import type { SentMessage } from "../contract.js";
import { chunkText } from "./chunker.js";
import { isAdapterError } from "../contract.js";
import type { GatewayMetrics } from "../metrics.js";
import { OutboundScheduler } from "./scheduler.js";
import type { SentLog } from "./sent-log.js";

/** A reply's chunks as the platform gets them: rendered by the adapter's format, then split at its limit. */
export function chunksOf(adapter: Adapter, markdown: string): string[] {
  return adapter.format ? adapter.format.chunks(markdown) : chunkText(markdown, adapter.limits.maxTextLength);
}

/**
 * Sends one rendered chunk. A refusal of the text itself never loses it: a
 * chunk refused as too long is split smaller and each piece sent (a few
 * rounds at most), one refused for its formatting is sent as plain text.
 * Only the first piece quotes the user's message. Returns the first piece's
 * message.
 */
export async function sendChunk(
  adapter: Adapter,
  to: ReplyAddress,
  chunk: string,
  key: string,
  onRefused?: (why: "too-long" | "bad-format") => void,
  depth = 0,
  plain = false,
): Promise<SentMessage> {
  try {
    return await adapter.sink.send(to, chunk, { idempotencyKey: key, ...(plain && { plain }) });
  } catch (err) {
    const format = adapter.format;
    if (!format || !isAdapterError(err, "Rejected") || err.reason === undefined) throw err;
    onRefused?.(err.reason);
    if (err.reason === "bad-format" && !plain) return adapter.sink.send(to, format.plain(chunk), { idempotencyKey: `${key}p`, plain: true });
    if (err.reason !== "too-long" || depth >= 3) throw err;
    const half = Math.max(1, Math.floor(chunk.length / 2));
    let pieces: string[] = [];
    try {
      if (!plain) pieces = format.split(chunk, half);
    } catch {
      // A tag longer than half the chunk cannot be split as rendered: the plain text can.
    }
    if (pieces.length < 2) {
      pieces = chunkText(plain ? chunk : format.plain(chunk), half);
      plain = true;
    }
    let first: SentMessage | undefined;
    for (const [j, piece] of pieces.entries()) {
      const sent = await sendChunk(adapter, j === 0 ? to : { ...to, replyToMessageId: undefined }, piece, `${key}.${j}`, onRefused, depth + 1, plain);
      first ??= sent;
    }
    if (!first) throw err;
    return first;
  }
}

/** Edits a message to a rendered chunk; one the platform cannot parse is written as plain text instead. */
async function editChunk(adapter: Adapter, to: ReplyAddress, messageId: string, chunk: string): Promise<void> {
  try {
    await adapter.sink.edit(to, messageId, chunk);
  } catch (err) {
    if (!adapter.format || !isAdapterError(err, "Rejected") || err.reason !== "bad-format") throw err;
    await adapter.sink.edit(to, messageId, adapter.format.plain(chunk), { plain: true });
  }
}

/** markSending found the reply no longer pending or sending: it was sent meanwhile, or another process took it. */
class ReplyTaken extends Error {}

export const adapterKey = (platform: string, botId: string) => `${platform}:${botId}`;
export const chatKey = (a: ReplyAddress) => `${a.platform}:${a.botId}:${a.chatId}:${a.threadId ?? ""}`;

interface Draft {
  /** Set once the final reply takes over: no more streaming edits. */
  final?: boolean;
  messageId?: string;
  sending?: Promise<void>;
  text: string;
  shown: string;
  lastEdit: number;
  timer?: NodeJS.Timeout;
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
  readonly #drafts = new Map<string, Draft>();
  readonly #turnStart = new Map<string, number>();
  readonly #inFlight = new Set<string>();
  /** Replies this process has taken on (queued behind their chat, or being sent): their claims are kept fresh in shared mode. */
  readonly #held = new Set<string>();
  #claimTimer: NodeJS.Timeout | undefined;
  /** Replies to one chat are delivered in the order they were emitted. */
  readonly #chains = new Map<string, Promise<void>>();

  /** Held closed while the gateway starts, so replies recovered from before a restart go out before new ones. */
  #gate: Promise<void> = Promise.resolve();
  #openGate: (() => void) | undefined;

  constructor(readonly opts: OutboundOptions) {}

  hold(): void {
    this.#gate = new Promise((r) => (this.#openGate = r));
  }

  release(): void {
    this.#openGate?.();
  }

  /** Queues every reply written but not confirmed sent, each behind its chat's earlier replies. */
  async queueUnsent(): Promise<number> {
    const rows = await this.opts.deliveries.unsent({ staleAfterMs: this.opts.staleAfterMs });
    for (const r of rows) void this.#holding(r.id, () => this.#inOrder(chatKey(JSON.parse(r.address) as ReplyAddress), () => this.deliver(r)));
    return rows.length;
  }

  async #holding<T>(id: string, fn: () => Promise<T>): Promise<T> {
    this.#held.add(id);
    try {
      return await fn();
    } finally {
      this.#held.delete(id);
    }
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
        if (e.phase === "turn-start" && e.detail?.turnId) this.#turnStart.set(String(e.detail.turnId), Date.now());
        return;
      case "typing":
        return this.typing(e.replyTo);
      case "text-delta":
        return this.#stream(e.turnId, e.replyTo, e.text, e.inboundId);
      case "text-final": {
        const { deliveryId, turnId } = e;
        // Take the draft now: turn-complete follows at once and forgets the turn.
        const draft = this.#drafts.get(turnId);
        if (draft) {
          draft.final = true;
          if (draft.timer) clearTimeout(draft.timer);
        }
        if (deliveryId) await this.#holding(deliveryId, () => this.#inOrder(chatKey(e.replyTo), () => this.deliverId(deliveryId, draft)));
        this.#forget(turnId);
        return;
      }
      case "notice": {
        const { deliveryId } = e;
        if (deliveryId && e.replyTo) await this.#holding(deliveryId, () => this.#inOrder(chatKey(e.replyTo!), () => this.deliverId(deliveryId)));
        return;
      }
      case "turn-complete": {
        const draft = this.#drafts.get(e.turnId);
        this.#forget(e.turnId);
        // Stopped, fenced or failed after part of the answer was shown: the draft says so.
        if (draft && !draft.final) await this.#stopDraft(e.replyTo, draft);
        return;
      }
      default:
        return;
    }
  };

  #inOrder(key: string, fn: () => Promise<void>): Promise<void> {
    const prev = this.#chains.get(key) ?? this.#gate;
    const next = prev.then(fn, fn);
    const tail = next.catch(() => undefined);
    this.#chains.set(key, tail);
    void tail.then(() => {
      if (this.#chains.get(key) === tail) this.#chains.delete(key);
    });
    return next;
  }

  #forget(turnId: string): void {
    const d = this.#drafts.get(turnId);
    if (d?.timer) clearTimeout(d.timer);
    this.#drafts.delete(turnId);
    this.#turnStart.delete(turnId);
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
    const a = this.#for(to);
    if (!a || !draft.messageId) return;
    const mid = draft.messageId;
    const room = a.adapter.limits.maxTextLength - STOPPED_MARK.length;
    const shown = draft.shown.length > room ? `${draft.shown.slice(0, Math.max(0, room - 1))}…` : draft.shown;
    const text = `${shown}${STOPPED_MARK}`;
    try {
      await a.scheduler.schedule(chatKey(to), () => a.adapter.sink.edit(to, mid, text), { label: "edit" });
      draft.shown = text;
      this.opts.metrics.outbound.inc({ platform: to.platform, call: "edit", outcome: "ok" });
    } catch (err) {
      this.opts.metrics.outbound.inc({ platform: to.platform, call: "edit", outcome: "error" });
      this.opts.log.warn({ platform: to.platform, err: errInfo(err) }, "could not mark a stopped draft as stopped; its partial text stays as it is");
    }
  }

  /** Sizes of the per-chat and per-turn state, for tests and diagnostics. */
  stats(): { drafts: number; turnStart: number; chains: number; inFlight: number; held: number } {
    return { drafts: this.#drafts.size, turnStart: this.#turnStart.size, chains: this.#chains.size, inFlight: this.#inFlight.size, held: this.#held.size };
  }

  async typing(to: ReplyAddress): Promise<void> {
    const a = this.#for(to);
    if (!a) return;
    const r = await a.scheduler.schedule(chatKey(to), () => a.adapter.sink.typing(to).then(() => true), { essential: false, label: "typing" });
    this.opts.metrics.outbound.inc({ platform: to.platform, call: "typing", outcome: r ? "ok" : "skipped" });
  }

  /** Streams a draft: sent once the turn has run a while, then edited at the adapter's pace. */
  async #stream(turnId: string, to: ReplyAddress, text: string, inboundId?: string): Promise<void> {
    const a = this.#for(to);
    if (!a || !a.adapter.limits.canEdit) return;
    const started = this.#turnStart.get(turnId) ?? Date.now();
    let d = this.#drafts.get(turnId);
    if (!d) {
      if (Date.now() - started < (this.opts.streamAfterMs ?? 1000)) return;
      // A draft goes straight to the scheduler: it must not overtake this chat's earlier replies still queued. Try again at the next delta.
      if (this.#chains.has(chatKey(to))) return;
      d = { text, shown: "", lastEdit: 0 };
      this.#drafts.set(turnId, d);
      const draft = d;
      draft.timer = setTimeout(() => {
        draft.timer = undefined;
        if (draft.final || this.#chains.has(chatKey(to))) return;
        const first = chunksOf(a.adapter, draft.text)[0] ?? "…";
        draft.sending = a.scheduler
          .schedule(chatKey(to), () => a.adapter.sink.send(to, first), { essential: false, label: "draft" })
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
    draft.timer = setTimeout(() => {
      draft.timer = undefined;
      if (draft.final) return;
      const next = chunksOf(a.adapter, draft.text)[0] ?? "";
      if (!draft.messageId || next === draft.shown) return;
      void a.scheduler.schedule(chatKey(to), () => a.adapter.sink.edit(to, draft.messageId!, next), { essential: false, label: "edit" }).then(() => {
        draft.shown = next;
        draft.lastEdit = Date.now();
      });
    }, Math.max(0, interval - (Date.now() - draft.lastEdit)));
    draft.timer.unref?.();
  }

  async deliverId(id: string, draft?: Draft): Promise<void> {
    const rec = await this.opts.deliveries.take(id);
    if (rec) await this.deliver(rec, draft);
  }

  /**
   * Shared mode: another process takes over replies whose claim is older
   * than staleAfterMs. A reply queued here behind a slow chat is not
   * abandoned, so this process renews the claims of every reply it holds.
   */
  startClaims(): void {
    const stale = this.opts.staleAfterMs;
    if (!stale || this.#claimTimer) return;
    this.#claimTimer = setInterval(() => {
      if (!this.#held.size) return;
      this.opts.deliveries.renewClaims([...this.#held], this.opts.owner ?? "").catch((err) => {
        this.opts.metrics.internalErrors.inc({ where: "reply-claims-renew" });
        this.opts.log.error({ err: errInfo(err) }, "renewing reply claims failed; another process may send them after the stale period");
      });
    }, Math.max(250, Math.floor(stale / 3)));
    this.#claimTimer.unref?.();
  }

  stopClaims(): void {
    clearInterval(this.#claimTimer);
    this.#claimTimer = undefined;
  }

  /**
   * Sends one durable reply: chunked at the adapter's limit, the first chunk
   * quoting the user's message, each chunk through the scheduler (which
   * waits out 429s and never drops). A streamed draft becomes the first chunk.
   */
  async deliver(rec: DeliveryRecord, draft?: Draft): Promise<void> {
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
      const to = JSON.parse(rec.address) as ReplyAddress;
      const chunks = chunksOf(a.adapter, rec.text);
      await draft?.sending;
      // A draft a previous process showed for this event (its turn never committed) becomes the reply's first chunk.
      const adopted = !draft && rec.inboundId && rec.part === 0 ? this.opts.sentLog?.draftOf(rec.inboundId) : undefined;
      if (adopted) draft = { messageId: adopted, text: "", shown: "", lastEdit: 0, final: true };
      const found = triedBefore ? await this.#readBack(a, rec, to, chunks.length, draft) : undefined;
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
            this.opts.log.warn({ deliveryId: rec.id, platform: rec.platform, err: errInfo(err) }, "the draft left by a crash could not be edited; posting the reply as a new message");
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
            const already = attempt++ > 0 ? await this.#findOne(a, rec, target, key) : undefined;
            if (!already) await handOver();
            const r = already ?? (await sendChunk(a.adapter, target, chunk, key, (why) => this.#refused(rec, why)));
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
    this.opts.log.warn({ deliveryId: rec.id, platform: rec.platform, reason: why }, why === "too-long" ? "the platform refused a reply chunk as too long; it is split smaller and sent again" : "the platform could not parse a reply chunk's formatting; it is sent again as plain text");
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
        this.opts.log.warn({ deliveryId: rec.id, attempt, err: errInfo(err) }, "a sent reply could not be marked sent; retrying (it is not sent again meanwhile)");
        await new Promise<void>((r) => setTimeout(r, Math.min(2000, 50 * 2 ** Math.min(attempt - 1, 6))).unref?.());
      }
    }
  }

  /**
   * Before resending a reply left `sending`, asks the platform which of its
   * chunks it already shows (Slack: by the delivery key carried in each
   * message's metadata). Chunks the local sent log knows are not asked about.
   * A platform that cannot tell (no read-back, or it refused the read) gets
   * the chunk again: that is the documented in-flight window.
   */
  async #readBack(a: { adapter: Adapter; scheduler: OutboundScheduler }, rec: DeliveryRecord, to: ReplyAddress, chunks: number, draft?: Draft): Promise<Map<string, SentMessage> | undefined> {
    const findSent = a.adapter.sink.findSent?.bind(a.adapter.sink);
    if (!findSent) return undefined;
    const keys: string[] = [];
    for (let i = 0; i < chunks; i++) if (!(i === 0 && draft?.messageId) && this.opts.sentLog?.sent(rec.id, i) === undefined) keys.push(`${rec.id}:${i}`);
    if (!keys.length) return undefined;
    try {
      const found = await a.scheduler.schedule(chatKey(to), () => findSent(to, keys, rec.createdAt), { label: "read-back" });
      this.opts.metrics.outbound.inc({ platform: rec.platform, call: "read-back", outcome: found?.size ? "found" : "absent" });
      return found;
    } catch (err) {
      this.opts.metrics.outbound.inc({ platform: rec.platform, call: "read-back", outcome: "error" });
      if (!isAdapterError(err, "Rejected")) throw err; // the reply stays queued; the read is tried again
      this.opts.log.error({ deliveryId: rec.id, platform: rec.platform, err: errInfo(err) }, "could not check whether a reply left sending by a crash was already posted; sending it again, so it may show twice");
      return undefined;
    }
  }

  /** One chunk's read-back before a retried send (no rate-limit slot of its own: it runs inside the send's). */
  async #findOne(a: { adapter: Adapter }, rec: DeliveryRecord, to: ReplyAddress, key: string): Promise<SentMessage | undefined> {
    if (!a.adapter.sink.findSent) return undefined;
    try {
      return (await a.adapter.sink.findSent(to, [key], rec.createdAt)).get(key);
    } catch (err) {
      if (!isAdapterError(err, "Rejected")) throw err;
      this.opts.metrics.outbound.inc({ platform: rec.platform, call: "read-back", outcome: "error" });
      this.opts.log.error({ deliveryId: rec.id, platform: rec.platform, err: errInfo(err) }, "could not check whether a failed send was posted after all; sending it again, so it may show twice");
      return undefined;
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
    for (const d of this.#drafts.values()) if (d.timer) clearTimeout(d.timer);
    for (const a of this.#adapters.values()) a.scheduler.close();
    this.opts.sentLog?.close();
  }
}
