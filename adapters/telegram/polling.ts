/**
 * A hand-written getUpdates loop, instead of grammY's bot.start() or
 * @grammyjs/runner.
 *
 * Why: Telegram drops every update below the `offset` of the next getUpdates
 * call, so moving the offset IS the acknowledgement. bot.start() moves it as
 * soon as a batch has been passed to the middleware, and the runner fetches
 * the next batch while handlers still run; either way an update can be
 * confirmed before the gateway has durably recorded it, and a crash in that
 * window loses the message for good. Here the offset moves past an update
 * only after deliver() resolved for it (ctx.inbound: recorded or found to be a
 * duplicate). Updates of a batch are delivered one at a time, in order. When
 * delivery fails (the database is briefly down) the same update is retried
 * with backoff and never skipped; on stop it is left unconfirmed and Telegram
 * hands it out again on the next start. At-least-once, then: the gateway's
 * dedupe on eventId makes that exactly-once.
 */
import type { Api } from "grammy";
import type { Update } from "grammy/types";
import type { Logger } from "../../src/log.js";
import type { AdapterHealth } from "../types.js";
import { describeError } from "./errors.js";
import { abortScope, backoffMs, sleep, type Backoff } from "./util.js";

export interface LongPollerOptions {
  api: Api;
  /** Seconds Telegram holds an empty getUpdates open. */
  timeoutSec: number;
  allowedUpdates: readonly string[];
  /** Resolves once the update is durably recorded (or there is nothing to record); rejects to have it retried. */
  deliver: (update: Update) => Promise<void>;
  log: Logger;
  backoff: Backoff;
  /** Counts a failed record (switchboard_internal_errors_total). */
  onError?: (where: string, err: unknown) => void;
  /** The gateway's ctx.batch: a batch's updates arrived together, so none is handled before all are recorded. */
  batch?: <T>(fn: () => Promise<T>) => Promise<T>;
}

/** The chat an update belongs to (updates without one share a key, so they stay in order). */
function chatOf(update: Update): string {
  for (const v of Object.values(update)) {
    const chat =
      (v as { chat?: { id?: unknown }; message?: { chat?: { id?: unknown } } } | undefined)?.chat ??
      (v as { message?: { chat?: { id?: unknown } } } | undefined)?.message?.chat;
    if (chat?.id !== undefined) return String(chat.id);
  }
  return "";
}

/** getUpdates failures in a row before health() reports not ready. */
const UNHEALTHY_AFTER = 3;
const STOPPED = Symbol("stopped");

export type UpdateType = Exclude<keyof Update, "update_id">;
/** grammY types its signal parameter with the abort-controller polyfill; Node's AbortSignal is what it gets at run time. */
type GrammySignal = Parameters<Api["getUpdates"]>[1];
const grammySignal = (s: AbortSignal): GrammySignal => s as unknown as GrammySignal;

export class LongPoller {
  private readonly abort = new AbortController();
  private offset: number | undefined;
  /** The offset Telegram last saw: every update below it is gone from the server. */
  private confirmed: number | undefined;
  private pollFailures = 0;
  private pollError: string | undefined;
  private stuck: { updateId: number; attempts: number; error: string } | undefined;
  private loop: Promise<void> | undefined;

  constructor(private readonly o: LongPollerOptions) {}

  start(): void {
    this.loop ??= this.run().catch((err: unknown) => {
      // run() handles its own errors; reaching this is a bug, and a stalled loop must be visible.
      this.pollFailures = UNHEALTHY_AFTER;
      this.pollError = `the polling loop stopped unexpectedly: ${describeError(err).detail}`;
      this.o.log.error({ err: describeError(err) }, "telegram polling loop crashed; restart the adapter");
    });
  }

  /** Aborts the long poll and any wait, then confirms what was delivered so a restart does not see it again. */
  async stop(): Promise<void> {
    if (this.abort.signal.aborted) return this.loop;
    this.abort.abort();
    await this.loop;
    if (this.offset !== undefined && this.offset !== this.confirmed) {
      // timeout 0 answers at once; limit 1 keeps the answer small. What it
      // returns is at or above the offset, so it stays unconfirmed.
      const signal = AbortSignal.timeout(2000);
      try {
        await this.o.api.getUpdates({ offset: this.offset, timeout: 0, limit: 1, allowed_updates: this.allowed() }, grammySignal(signal));
        this.confirmed = this.offset;
      } catch (err) {
        this.o.log.warn(
          { err: describeError(err, "getUpdates") },
          "telegram: could not confirm the last updates at stop; they will be delivered again and deduplicated",
        );
      }
    }
  }

  health(): AdapterHealth {
    if (this.abort.signal.aborted) return { ready: false, detail: "stopped" };
    if (this.pollFailures >= UNHEALTHY_AFTER)
      return { ready: false, detail: `getUpdates failed ${this.pollFailures} times in a row: ${this.pollError ?? "unknown error"}` };
    if (this.stuck)
      return {
        ready: true,
        detail: `update ${this.stuck.updateId} could not be recorded after ${this.stuck.attempts} attempts (${this.stuck.error}); retrying, later updates wait`,
      };
    return { ready: true };
  }

  private allowed(): UpdateType[] {
    return [...this.o.allowedUpdates] as UpdateType[];
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    while (!signal.aborted) {
      let batch: Update[];
      const offset = this.offset;
      try {
        batch = await this.o.api.getUpdates(
          // After a failure, ask without holding the request open, so a
          // recovered connection shows in health() at once, not a poll later.
          { offset, timeout: this.pollFailures > 0 ? 0 : this.o.timeoutSec, limit: 100, allowed_updates: this.allowed() },
          grammySignal(signal),
        );
        this.confirmed = offset;
        this.pollFailures = 0;
        this.pollError = undefined;
      } catch (err) {
        if (signal.aborted) return;
        this.pollFailures++;
        const d = describeError(err, "getUpdates");
        this.pollError = d.detail.includes("409")
          ? `${d.detail}. Another process is polling with this bot token, or a webhook is set: run one gateway per bot in polling mode, or use TELEGRAM_MODE=webhook`
          : d.detail;
        this.o.log.warn({ err: d, failures: this.pollFailures }, "telegram getUpdates failed; retrying");
        await sleep(backoffMs(this.o.backoff, this.pollFailures), signal);
        continue;
      }
      // Chats are recorded side by side (their records share a commit); one chat's updates go in order.
      const recorded = new Set<Update>();
      const chats = new Map<string, Update[]>();
      for (const u of batch) {
        const k = chatOf(u);
        const list = chats.get(k);
        if (list) list.push(u);
        else chats.set(k, [u]);
      }
      const stopped = abortScope(signal, STOPPED);
      const recordAll = () =>
        Promise.all(
          [...chats.values()].map(async (updates) => {
            for (const u of updates) {
              if (!(await this.deliverUntilRecorded(u, stopped.race))) return false;
              recorded.add(u);
            }
            return true;
          }),
        );
      // One batch arrived at one moment: e.g. twenty /new in it compare against the same session.
      let finished: boolean[];
      try {
        finished = await (this.o.batch ? this.o.batch(recordAll) : recordAll());
      } finally {
        stopped.release();
      }
      // The offset confirms only the batch's recorded prefix: nothing unrecorded is ever skipped.
      for (const update of batch) {
        if (!recorded.has(update)) break;
        if (Number.isSafeInteger(update.update_id)) this.offset = Math.max(this.offset ?? 0, update.update_id + 1);
      }
      if (finished.includes(false)) return;
    }
  }

  /** true once delivered; false when stopped first (the update stays unconfirmed). */
  private async deliverUntilRecorded(update: Update, untilStopped: <T>(p: Promise<T>) => Promise<T | typeof STOPPED>): Promise<boolean> {
    const signal = this.abort.signal;
    for (let attempt = 1; ; attempt++) {
      if (signal.aborted) return false;
      try {
        // stop() must stay prompt even when the store hangs: stop waiting and
        // leave the update unconfirmed. If the hung call does record it later,
        // the redelivery after restart is a duplicate the gateway drops.
        const r = await untilStopped(this.o.deliver(update));
        if (r === STOPPED) return false;
        this.stuck = undefined;
        return true;
      } catch (err) {
        const error = err instanceof Error ? err.name : typeof err;
        this.o.onError?.("telegram-polling-record", err);
        this.stuck = { updateId: update.update_id, attempts: attempt, error };
        const level = attempt >= 5 ? "error" : "warn";
        this.o.log[level](
          { updateId: update.update_id, attempt, error },
          "telegram: recording an inbound update failed; retrying the same update (its offset stays unconfirmed)",
        );
        await sleep(backoffMs(this.o.backoff, attempt), signal);
      }
    }
  }
}
