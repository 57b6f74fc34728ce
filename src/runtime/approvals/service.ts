/**
 * Approvals of tool calls by a person in the chat, durable in the database.
 *
 * A call whose policy is `ask` creates a pending Approval row, shows a card
 * in the chat the turn answers, and waits. The first decision wins: it is
 * one conditional UPDATE (ApprovalStore.decide), so of 50 simultaneous clicks
 * one changes the row and the others are told who won. A decision edits the
 * card in place. APPROVAL_TIMEOUT expires it; /stop and /new (and any abort of
 * the turn) cancel it. A click on an approval no process here waits for (left
 * by a run before a restart) expires it and says so: it never hangs, and the
 * replayed message asks again.
 */
import type { ApprovalVerdict } from "../../agent/tools.js";
import type { ToolCall } from "../../agent/types.js";
import { errInfo } from "../../log.js";
import type { ApprovalRecord, ApprovalStatus } from "../../store/approvals.js";
import { codecs } from "../../store/codecs.js";
import type { MessageEvent, ReplyAddress } from "../events.js";
import { TurnAbandoned } from "../turn.js";
import { ARGS_APPROVABLE_MAX } from "./arguments.js";
import { prettyArguments, type ApprovalCard } from "./card.js";
import {
  alreadyDecided,
  alwaysScope,
  inChat,
  mayDecide,
  NOBODY_WAITS,
  NOT_PAIRED,
  onlyWhoMayDecide,
  RESTARTING,
  tooLongVerdict,
  UNRECORDED,
  verdictOf,
  type ApprovalClick,
  type ClickResult,
} from "./decision.js";
import { ToolGrants } from "./grants.js";
import { cardOf, pendingRecord } from "./record.js";
import type { ApprovalServiceOptions } from "./options.js";

interface Waiter {
  sessionId: string;
  resolve(v: ApprovalVerdict): void;
  record: ApprovalRecord;
}

export const APPROVAL_ID = /^[a-z0-9]{6}$/;

export class ApprovalService {
  readonly #waiters = new Map<string, Waiter>();
  /** Expiries under way because the turn was abandoned (a stop): the stop waits for their card edits. */
  readonly #ending = new Map<string, Promise<boolean>>();
  /** Set by a graceful stop: a turn that asks from then on is abandoned at once (expireForStop). */
  #abandon: ((sessionId: string) => void) | undefined;
  /** Decisions made while their card was still on its way: the card is edited once it is shown. */
  readonly #lateEdits = new Map<string, { decided: ApprovalRecord; reason: string | undefined }>();

  readonly #grants: ToolGrants;

  constructor(readonly opts: ApprovalServiceOptions) {
    this.#grants = new ToolGrants(opts.kv, opts.threadsShareChat === true);
  }

  /** Approvals this process waits on now. */
  get waiting(): number {
    return this.#waiters.size;
  }

  async ask(call: ToolCall, server: string | undefined, ctx: { sessionId: string; event: MessageEvent }, signal: AbortSignal): Promise<ApprovalVerdict> {
    const to = ctx.event.replyTo;
    const granted = await this.#grants.holds(to, call.name, ctx.event.origin.senderId);
    if (granted) return { decision: "approve", note: granted };
    if (this.#abandon) {
      // Stopping: nobody would see the card before the restart. The turn is abandoned and replayed, and asks then.
      this.#abandon(ctx.sessionId);
      return { decision: "deny", note: RESTARTING };
    }
    const args = prettyArguments(call.arguments);
    if (args.length > ARGS_APPROVABLE_MAX) return this.#tooLong(call, args, ctx.sessionId);
    const record = pendingRecord(call, args, server, ctx, this.opts);
    await this.opts.store.create(record);
    const verdict = new Promise<ApprovalVerdict>((resolve) => this.#waiters.set(record.id, { sessionId: ctx.sessionId, resolve, record }));
    // A shutdown abandons the turn (its message is answered again after the restart): the card says so, not "cancelled".
    const onAbort = () =>
      void (signal.reason instanceof TurnAbandoned
        ? this.#expireAbandoned(record.id)
        : this.#finish(record.id, "cancelled", { reason: "the turn was stopped" }));
    // Listening before the card goes out: an abort while it is on its way (a 429 waited out, a stop) must end the wait, not be missed.
    signal.addEventListener("abort", onAbort, { once: true });
    if (signal.aborted) onAbort();
    const timer = setTimeout(
      () => void this.#finish(record.id, "expired", { reason: `no decision within ${Math.round(this.opts.timeoutMs / 60_000) || 1} min` }),
      this.opts.timeoutMs,
    );
    timer.unref?.();
    const poll = this.opts.pollMs ? setInterval(() => void this.#poll(record.id), this.opts.pollMs) : undefined;
    poll?.unref?.();
    try {
      // The card's delivery may outlast the decision (the turn aborted meanwhile): the verdict does not wait for it.
      await Promise.race([this.#showCard(record, to, call), verdict]);
      return await verdict;
    } finally {
      clearTimeout(timer);
      clearInterval(poll);
      signal.removeEventListener("abort", onAbort);
      this.#waiters.delete(record.id);
    }
  }

  /** Shows the card and remembers its message; never rejects (no card: the call is denied at once). */
  async #showCard(record: ApprovalRecord, to: ReplyAddress, call: ToolCall): Promise<void> {
    try {
      const mid = await this.opts.transport.show(to, cardOf(record));
      if (mid) {
        record.cardMessageId = mid;
        // The card is shown and its waiter is here: a failure to note where it is (for the edit after a restart)
        // must not cancel a call a person can still decide.
        await this.opts.store.setCard(record.id, mid).catch((err: unknown) => {
          this.opts.log?.warn(
            { approvalId: record.id, err: errInfo(err) },
            "could not record where an approval card is; it works, but a restart cannot edit it",
          );
        });
      }
      // Decided while the card was on its way: it shows the decision now rather than buttons nobody can use.
      const late = this.#lateEdits.get(record.id);
      this.#lateEdits.delete(record.id);
      if (late && mid) await this.#editCard({ ...late.decided, cardMessageId: mid }, late.reason);
      this.opts.log?.info({ approvalId: record.id, tool: call.name, server: record.server, sessionId: record.sessionId }, "a tool call waits for approval");
    } catch (err) {
      this.#lateEdits.delete(record.id);
      // No card, no decision: deny now rather than wait out the timeout for a click nobody can make.
      this.opts.log?.warn({ approvalId: record.id, tool: call.name, err: errInfo(err) }, "the approval card could not be shown; the call is denied");
      await this.#finish(record.id, "cancelled", { reason: "the card could not be shown" });
    }
  }

  /** /stop, /new: every approval the session waits on is cancelled (its turn then ends). */
  async cancelSession(sessionId: string, reason: string): Promise<number> {
    const ids = [...this.#waiters].filter(([, w]) => w.sessionId === sessionId).map(([id]) => id);
    for (const id of ids) await this.#finish(id, "cancelled", { reason });
    return ids.length;
  }

  /**
   * A graceful stop: no approval holds it for the whole grace. Every turn
   * waiting for a person is abandoned now through `abandon` (the runner's:
   * the turn commits nothing, and its message is answered again after the
   * restart), and its card is edited to say so; a turn that asks from now on
   * is abandoned as it asks. Resolves once those cards are edited (the
   * adapters stop next), with how many approvals were waiting.
   */
  async expireForStop(abandon: (sessionId: string) => void): Promise<number> {
    this.#abandon = abandon;
    const waiting = [...this.#waiters];
    for (const [id, w] of waiting) {
      abandon(w.sessionId);
      // The abort expires the row through the waiter's listener; if it has not, expire it here.
      void this.#expireAbandoned(id);
    }
    await Promise.allSettled([...this.#ending.values()]);
    if (waiting.length) this.opts.log?.info({ count: waiting.length }, "approvals expired with the stop; their messages are answered again after the restart");
    return waiting.length;
  }

  /** Nobody may approve what they cannot read in full, and this much would flood the chat: denied without asking. */
  #tooLong(call: ToolCall, args: string, sessionId: string): ApprovalVerdict {
    this.opts.onDecision?.("too_long");
    this.opts.log?.warn(
      { tool: call.name, characters: args.length, max: ARGS_APPROVABLE_MAX, sessionId },
      "a tool call's arguments are too long to show for approval; the call is denied",
    );
    return tooLongVerdict(args.length);
  }

  /** One expiry per approval whose turn was abandoned, however many ask for it. */
  #expireAbandoned(id: string): Promise<boolean> {
    let p = this.#ending.get(id);
    if (!p) {
      p = this.#finish(id, "expired", { reason: RESTARTING }).finally(() => this.#ending.delete(id));
      this.#ending.set(id, p);
    }
    return p;
  }

  /** A click or a typed `/approve <id>`. Never throws for the clicker's sake: the result says what happened. */
  async click(c: ApprovalClick): Promise<ClickResult> {
    const rec = await this.opts.store.get(c.id);
    // Another conversation's approval (another chat, another forum topic) reads as unknown: no oracle for ids elsewhere.
    if (!rec || !inChat(rec, c)) return { ok: false, text: `There is no approval ${c.id} in this chat.` };
    if (!c.isAdmin && !(await this.opts.mayApprove(c))) {
      this.opts.onDecision?.("refused");
      return { ok: false, text: NOT_PAIRED };
    }
    if (!mayDecide(rec, c, this.opts.approvers)) {
      this.opts.onDecision?.("refused");
      return { ok: false, text: onlyWhoMayDecide(rec, this.opts.approvers) };
    }
    if (rec.status !== "pending") return { ok: false, text: alreadyDecided(rec) };
    const status = c.action === "deny" ? "denied" : "approved";
    const by = c.senderName ?? c.senderId;
    const waiter = this.#waiters.get(c.id);
    const waitedElsewhere = !waiter && rec.owner !== this.opts.owner && !this.opts.pollMs;
    if (!waiter && rec.owner === this.opts.owner) {
      // Asked here, and its turn has ended without a recorded decision (the store failed to record one): an
      // "Approved." now would run nothing. Close it instead.
      await this.#finish(c.id, "expired", { reason: UNRECORDED }, rec);
      return { ok: false, text: NOBODY_WAITS.unrecorded };
    }
    if (waitedElsewhere || (!waiter && rec.expiresAt.getTime() <= Date.now())) {
      // Nobody waits for it any more: the run that asked ended with a restart. Say so, never hang.
      await this.#finish(c.id, "expired", { reason: "the gateway restarted before a decision; send your message again if it still matters" }, rec);
      return { ok: false, text: NOBODY_WAITS.restarted };
    }
    const won = await this.#finish(c.id, status, { byId: c.senderId, byName: by, always: c.action === "always" }, rec);
    if (!won) {
      const now = await this.opts.store.get(c.id);
      return { ok: false, text: now ? alreadyDecided(now) : `There is no approval ${c.id} in this chat.` };
    }
    const always = c.action === "always" ? alwaysScope(rec, c, this.opts.approvers) : undefined;
    if (always) await this.#grants.grant(rec, always === "chat" ? undefined : rec.requesterId);
    if (status !== "approved") return { ok: true, text: "Denied." };
    return {
      ok: true,
      text: always === "chat" ? "Approved (always in this chat)." : always ? "Approved (always, for your own calls in this chat)." : "Approved.",
    };
  }

  /**
   * At start (one process per database): approvals a previous run waited on
   * are expired and their cards say so. Their messages are replayed, and ask again.
   */
  async expireOrphans(): Promise<number> {
    const left = await this.opts.store.pendingNotOwnedBy(this.opts.owner);
    for (const r of left) await this.#finish(r.id, "expired", { reason: "the gateway restarted before a decision" }, r);
    if (left.length) this.opts.log?.info({ count: left.length }, "approvals left by the previous run expired; their messages are answered again");
    return left.length;
  }

  async #poll(id: string): Promise<void> {
    try {
      const rec = await this.opts.store.get(id);
      const w = this.#waiters.get(id);
      if (rec && w && rec.status !== "pending") this.#settle(w, rec);
    } catch (err) {
      this.opts.log?.warn({ approvalId: id, err: errInfo(err) }, "reading an approval failed; the next poll tries again");
    }
  }

  /** Writes the decision if it is the first; on a win, the waiter (if here) resumes and the card is edited. */
  async #finish(
    id: string,
    status: Exclude<ApprovalStatus, "pending">,
    d: { byId?: string; byName?: string; always?: boolean; reason?: string },
    known?: ApprovalRecord,
  ): Promise<boolean> {
    let won = false;
    try {
      won = await this.opts.store.decide(id, {
        status,
        ...(d.always !== undefined && { always: d.always }),
        ...(d.byId && { byId: d.byId }),
        ...(d.byName && { byName: d.byName }),
      });
    } catch (err) {
      this.opts.log?.error({ approvalId: id, err: errInfo(err) }, "recording an approval decision failed");
      // The store is away: a waiter still must not hang. Deny, and take the card's buttons away: nobody waits
      // on them any more (a later press is told so, and closes the row: see click).
      const w = this.#waiters.get(id);
      if (w) {
        this.#waiters.delete(id);
        w.resolve({ decision: "deny", note: "the decision could not be recorded" });
        if (w.record.cardMessageId) await this.#editCard({ ...w.record, status: "cancelled" }, UNRECORDED);
      }
      return false;
    }
    if (!won) return false;
    this.opts.onDecision?.(status);
    const w = this.#waiters.get(id);
    // The row read for this decision knows where the card is now (a group that moved to a new chat id); the waiter's copy is older.
    const rec = w && known ? { ...w.record, chatId: known.chatId, replyTo: known.replyTo } : (w?.record ?? known ?? (await this.opts.store.get(id)));
    if (!rec) return true;
    const decided: ApprovalRecord = { ...rec, status, always: d.always ?? false, decidedById: d.byId ?? null, decidedByName: d.byName ?? null };
    if (w) this.#settle(w, decided, d.reason);
    this.opts.log?.info({ approvalId: id, tool: rec.tool, status, by: d.byName }, "tool approval decided");
    if (decided.cardMessageId) await this.#editCard(decided, d.reason);
    else if (w) this.#lateEdits.set(id, { decided, reason: d.reason });
    return true;
  }

  async #editCard(decided: ApprovalRecord, reason: string | undefined): Promise<void> {
    try {
      await this.opts.transport.update(codecs.approvalReplyTo.decode(decided.replyTo, decided.id), decided.cardMessageId!, cardOf(decided, reason));
    } catch (err) {
      this.opts.log?.warn({ approvalId: decided.id, err: errInfo(err) }, "the approval card could not be edited");
    }
  }

  #settle(w: Waiter, rec: ApprovalRecord, reason?: string): void {
    this.#waiters.delete(rec.id);
    w.resolve(verdictOf(rec, reason));
  }
}
