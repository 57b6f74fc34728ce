import { errInfo, type Logger } from "../../log.js";
import type { InboundRecord, InboundStore } from "../../store/inbound.js";
import type { LeaseStore } from "../../store/leases.js";

/** How long a conversation lease lasts unless renewed, and how often it is renewed. */
const LEASE_TTL_MS = 30_000;
const LEASE_RENEW_MS = 10_000;
/** How often a process looks for conversations nobody is handling (after a peer crashed, or a missed kick). */
export const SWEEP_MS = 1_000;
/**
 * How long a sweep leaves alone a conversation whose lease another process
 * held when we last tried. The holder looks again after releasing, so the
 * sweep is only for a holder that died (its lease expires after
 * LEASE_TTL_MS anyway); retrying every second would only add lease traffic
 * for every busy conversation, in every process.
 */
const HELD_ELSEWHERE_MS = 5_000;

export interface DrainDeps {
  inbound: InboundStore;
  leases: LeaseStore;
  processId: string;
  log: Logger;
  /** Takes one recorded event into this process; `done` settles once its handling is committed. */
  take(rec: InboundRecord): Promise<{ done: Promise<unknown> } | undefined>;
  /**
   * Settles once the replies these handled events produced have left for
   * the platform (or given up). Each process paces and orders a chat's
   * replies in its own outbound queue, so a conversation may move to another
   * process only after this: its next replies must not overtake them.
   */
  flushed?(inboundIds: string[]): Promise<void>;
  /** Counts an error caught here (switchboard_internal_errors_total{where}); each is logged too. */
  onError?(where: string, err: unknown): void;
  /** How often a held lease is renewed (tests shorten it). */
  renewMs?: number;
}

/**
 * With several gateway processes on one database (SHARED_DATABASE): a
 * conversation's events are handled by whichever process holds the
 * conversation's lease, in recorded order. Order comes from the database,
 * never from one process's memory.
 */
export class ConversationDrainer {
  readonly #draining = new Map<string, Promise<void>>();
  /** Conversations kicked again while being drained. */
  readonly #dirty = new Set<string>();
  /** Conversations whose lease another process held, and when a sweep may try them again. */
  readonly #heldElsewhere = new Map<string, number>();
  #sweeper: NodeJS.Timeout | undefined;
  #stopped = false;
  #gate: Promise<void> = Promise.resolve();

  constructor(private readonly deps: DrainDeps) {}

  /** Handling waits for `gate` (the gateway's start); then a sweep runs every second. */
  start(gate: Promise<void>): void {
    this.#gate = gate;
    this.#sweeper = setInterval(() => void this.#sweep(), SWEEP_MS);
    this.#sweeper.unref();
  }

  /** Makes sure somebody drains this conversation: us, if we can take its lease. */
  kick(conversation: string): void {
    if (this.#stopped) return;
    if (this.#draining.has(conversation)) {
      this.#dirty.add(conversation);
      return;
    }
    const run = this.#gate
      .then(() => this.#drain(conversation))
      .catch((err) => {
        this.deps.onError?.("conversation-drain", err);
        this.deps.log.error({ conversation, err: errInfo(err) }, "draining a conversation failed; the sweeper retries it");
      })
      .finally(() => this.#draining.delete(conversation));
    this.#draining.set(conversation, run);
  }

  /** Settles when every drain under way has finished. */
  async idle(): Promise<void> {
    while (this.#draining.size) await Promise.allSettled([...this.#draining.values()]);
  }

  stop(): void {
    this.#stopped = true;
    if (this.#sweeper) clearInterval(this.#sweeper);
  }

  async #sweep(): Promise<void> {
    try {
      const now = Date.now();
      for (const [c, until] of this.#heldElsewhere) if (until <= now) this.#heldElsewhere.delete(c);
      for (const c of await this.deps.inbound.conversationsWaiting(new Date(now - SWEEP_MS))) if (!this.#heldElsewhere.has(c)) this.kick(c);
    } catch (err) {
      this.deps.onError?.("conversation-sweep", err);
      this.deps.log.error({ err: errInfo(err) }, "looking for waiting conversations failed; the next sweep tries again");
    }
  }

  /**
   * While holding the conversation's lease, take its unhandled events in
   * recorded order, wait until their handling is committed and their replies
   * have gone out, and release. Another process that records an event
   * meanwhile finds the lease taken and leaves the event to us; we look
   * again after releasing, so nothing is stranded.
   */
  async #drain(conversation: string): Promise<void> {
    const { leases, processId, inbound } = this.deps;
    for (;;) {
      if (!(await leases.acquire(conversation, processId, LEASE_TTL_MS))) {
        this.#heldElsewhere.set(conversation, Date.now() + HELD_ELSEWHERE_MS);
        return;
      }
      this.#heldElsewhere.delete(conversation);
      // A lease we could not renew may already be another process's: stop taking this conversation's events at once.
      let lost: string | undefined;
      const renew = setInterval(() => {
        void leases.renew(conversation, processId, LEASE_TTL_MS).then(
          (held) => {
            if (held || lost) return;
            lost = "taken over";
            this.deps.onError?.("lease-renew", new Error("lease lost"));
            this.deps.log.error({ conversation }, "a conversation lease was lost (expired and taken); this process stops draining it");
          },
          (err: unknown) => {
            if (lost) return;
            lost = "renewal failed";
            this.deps.onError?.("lease-renew", err);
            this.deps.log.error(
              { conversation, err: errInfo(err) },
              "renewing a conversation lease failed; this process stops draining it (another may take it over when it expires)",
            );
          },
        );
      }, this.deps.renewMs ?? LEASE_RENEW_MS);
      renew.unref();
      const taken = new Set<string>();
      const handles: Array<Promise<unknown>> = [];
      const unflushed: string[] = [];
      const settled = async () => !this.#dirty.has(conversation) && (await inbound.receivedIn(conversation, 1)).every((r) => taken.has(r.id));
      try {
        for (;;) {
          if (lost) break;
          this.#dirty.delete(conversation);
          const batch = (await inbound.receivedIn(conversation)).filter((r) => !taken.has(r.id));
          if (batch.length === 0) {
            await Promise.allSettled(handles.splice(0));
            if (!(await settled())) continue;
            // Our replies go out before the conversation can move to another process.
            if (unflushed.length) await this.deps.flushed?.(unflushed.splice(0));
            if (await settled()) break;
            continue;
          }
          for (const rec of batch) {
            if (lost) break;
            taken.add(rec.id);
            unflushed.push(rec.id);
            const took = await this.deps.take(rec);
            if (took) handles.push(took.done);
          }
        }
      } finally {
        clearInterval(renew);
        // A lost lease is left to expire: events we already took may still be running here.
        if (!lost)
          await leases.release(conversation, processId).catch((err: unknown) => {
            // It expires after LEASE_TTL_MS; until then the conversation waits for nobody.
            this.deps.onError?.("lease-release", err);
            this.deps.log.error({ conversation, err: errInfo(err) }, "releasing a conversation lease failed; it expires on its own");
          });
      }
      // Lost: whoever holds the lease now drains it; our sweep tries again once it is free.
      if (lost) {
        this.#heldElsewhere.set(conversation, Date.now() + HELD_ELSEWHERE_MS);
        return;
      }
      // An event recorded while we released may have found our lease: look once more.
      if (!this.#dirty.has(conversation) && (await inbound.receivedIn(conversation, 1)).length === 0) return;
    }
  }
}
