/**
 * The outbound scheduler: every platform call (send, edit, typing, cards,
 * read-back, leave) goes through it, and it holds the one per-chat queue.
 *
 * - Per chat, work runs one at a time in the order queued, so replies
 *   arrive in order. Different chats run concurrently. A piece of work is one
 *   call (`schedule`) or an item that needs several calls with nothing of
 *   the chat's between them (`hold`: a reply's chunks, a card and the
 *   argument parts before it); each of its calls is paced and retried the
 *   same way.
 * - Each call waits for a token from the chat's bucket and from the bot-wide
 *   (global) bucket, sized from the adapter's declared AdapterLimits.
 * - A 429 (AdapterError 'RateLimited') pauses the chat, or the whole bot when
 *   the error carries scope 'global', for retryAfterMs plus jitter; then the
 *   SAME call is retried. Essential calls are never dropped, however many
 *   429s; later calls of that chat wait behind it, so order holds.
 * - 'Transient' errors retry with exponential backoff, up to
 *   maxTransientRetries; anything else rejects at once.
 * - Non-essential calls (typing, reactions) are best effort: never retried,
 *   dropped while their chat or the bot is rate-limited, and a failure is
 *   logged and resolves undefined, so it can never delay or break a reply.
 *
 * Each platform's 429s are honoured by exactly one mechanism, never two:
 * - Telegram and Slack: this scheduler. Their SDK retries are off (grammY
 *   without the auto-retry plugin; Slack's WebClient with
 *   `rejectRateLimitedCalls: true` and `retryConfig: { retries: 0 }`), and
 *   the adapter maps the 429 to AdapterError('RateLimited', retryAfterMs).
 * - Discord: discord.js's REST queue, which knows Discord's per-route
 *   buckets and waits out a 429 itself (`retries: 0` for other failures).
 *   Its sink never reports RateLimited, so this scheduler only adds per-chat
 *   pacing on top, with no second retry loop.
 * An adapter that does report a platform-wide 429 sets `scope: 'global'`.
 *
 * Logs carry the chat key, the label and the error code, never message text
 * or error messages (those can echo the text).
 */
import { SwitchboardError } from "../../errors.js";
import { KeyedQueue } from "../../keyed-queue.js";
import { isAdapterError } from "../contract.js";
import { TokenBucket } from "./token-bucket.js";

export interface RateLimit {
  ratePerSec: number;
  burst: number;
}

export interface SchedulerLimits {
  perChat: RateLimit;
  global: RateLimit;
}

export interface ScheduleOptions {
  /** Default true. A non-essential call is best effort (typing indicators, reactions). */
  essential?: boolean;
  /** What the call is, for logs and metrics: 'send', 'edit', 'typing'... */
  label?: string;
}

export interface SchedulerLog {
  warn(obj: object, msg?: string): void;
  debug?(obj: object, msg?: string): void;
}

export interface RateLimitedInfo {
  chatKey: string;
  retryAfterMs: number;
  scope: "chat" | "global";
}

export interface OutboundSchedulerOptions {
  limits: SchedulerLimits;
  log?: SchedulerLog;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** Retries of a 'Transient' failure before the call rejects. Default 5. */
  maxTransientRetries?: number;
  onRateLimited?: (info: RateLimitedInfo) => void;
  /** Source of jitter in [0, 1); inject for deterministic tests. */
  random?: () => number;
}

/** schedule() after close(). */
export class SchedulerClosedError extends SwitchboardError<"Closed"> {
  override readonly name = "SchedulerClosedError";
  constructor(message: string) {
    super("Closed", message);
  }
}

/** A chat held by one piece of work (see `hold`): its calls run at once, paced and retried, without queueing again. */
export interface ChatLane {
  call<T>(call: () => Promise<T>, opts?: ScheduleOptions & { essential?: true }): Promise<T>;
  call<T>(call: () => Promise<T>, opts?: ScheduleOptions): Promise<T | undefined>;
}

interface Job {
  call: () => Promise<unknown>;
  essential: boolean;
  label: string;
  queuedAt: number;
}

interface Chat {
  /** Calls queued or in flight. */
  queued: number;
  bucket: TokenBucket;
  pausedUntil: number;
}

const TRANSIENT_BASE_MS = 500;
const MAX_BACKOFF_MS = 30_000;
/** When a 429 comes without retry_after: 1 s, doubling per consecutive 429, capped. */
const DEFAULT_RETRY_AFTER_MS = 1_000;

export class OutboundScheduler {
  private readonly limits: SchedulerLimits;
  private readonly log: SchedulerLog | undefined;
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly random: () => number;
  private readonly maxTransientRetries: number;
  private readonly onRateLimited: ((info: RateLimitedInfo) => void) | undefined;

  private readonly chats = new Map<string, Chat>();
  /** A chat's calls run one at a time, in the order scheduled. */
  private readonly serial = new KeyedQueue();
  private readonly global: TokenBucket;
  private globalPausedUntil = 0;
  private readonly globalWaiters: Array<() => void> = [];
  private globalPumping = false;
  private total = 0;
  private idle: Array<() => void> = [];
  private closed = false;
  private sweepAt = 1024;

  constructor(opts: OutboundSchedulerOptions) {
    this.limits = opts.limits;
    this.log = opts.log;
    this.now = opts.now ?? Date.now;
    this.sleep = opts.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.random = opts.random ?? Math.random;
    this.maxTransientRetries = opts.maxTransientRetries ?? 5;
    this.onRateLimited = opts.onRateLimited;
    this.global = new TokenBucket(opts.limits.global.ratePerSec, opts.limits.global.burst, this.now);
    // Fail at construction, not on the first message, if the per-chat limits are bad.
    new TokenBucket(opts.limits.perChat.ratePerSec, opts.limits.perChat.burst, this.now);
  }

  /**
   * Queues `call` behind the chat's earlier calls. Resolves with its result;
   * a non-essential call resolves undefined when skipped or failed. An
   * essential call rejects with the platform error ('Rejected', 'Unavailable',
   * other errors, or 'Transient' after the retries), or SchedulerClosedError.
   */
  schedule<T>(chatKey: string, call: () => Promise<T>, opts?: ScheduleOptions & { essential?: true }): Promise<T>;
  schedule<T>(chatKey: string, call: () => Promise<T>, opts?: ScheduleOptions): Promise<T | undefined>;
  schedule<T>(chatKey: string, call: () => Promise<T>, opts: ScheduleOptions = {}): Promise<T | undefined> {
    const essential = opts.essential ?? true;
    const label = opts.label ?? "call";
    if (this.closed) return this.refused(chatKey, label, essential);
    if (!essential && this.isPaused(this.chatFor(chatKey))) {
      this.log?.debug?.({ chatKey, label }, "non-essential call dropped: chat is rate-limited");
      return Promise.resolve(undefined);
    }
    const job: Job = { call, essential, label, queuedAt: this.now() };
    return this.enqueue(chatKey, (chat) => this.execute(chatKey, chat, job) as Promise<T | undefined>);
  }

  /**
   * Queues `work` behind the chat's earlier work (and behind `after`, when
   * given) and gives it the chat to itself: the calls it makes through the
   * lane run at once, each paced and retried as `schedule`'s are, and
   * nothing else of the chat runs until `work` settles. A lane's call made
   * after close() is refused as `schedule` would refuse it. Never call
   * `schedule` or `hold` for the same chat from inside `work`: it would wait
   * for itself.
   */
  hold<T>(chatKey: string, work: (lane: ChatLane) => Promise<T>, after?: Promise<unknown>): Promise<T> {
    return this.enqueue(chatKey, (chat) => work(this.laneOf(chatKey, chat)), after);
  }

  private enqueue<T>(chatKey: string, run: (chat: Chat) => Promise<T>, after?: Promise<unknown>): Promise<T> {
    const chat = this.chatFor(chatKey);
    chat.queued++;
    this.total++;
    return this.serial.run(chatKey, () => run(chat), after).finally(() => this.finished(chatKey, chat));
  }

  private laneOf(chatKey: string, chat: Chat): ChatLane {
    const call = <T>(fn: () => Promise<T>, opts: ScheduleOptions = {}): Promise<T | undefined> => {
      const essential = opts.essential ?? true;
      const label = opts.label ?? "call";
      if (this.closed) return this.refused(chatKey, label, essential);
      return this.execute(chatKey, chat, { call: fn, essential, label, queuedAt: this.now() }) as Promise<T | undefined>;
    };
    return { call } as ChatLane;
  }

  private refused(chatKey: string, label: string, essential: boolean): Promise<undefined> {
    if (!essential) return Promise.resolve(undefined);
    return Promise.reject(new SchedulerClosedError(`outbound scheduler is closed; '${label}' for ${chatKey} not queued`));
  }

  /** Work (calls and holds) queued or in flight, for one chat or in all. */
  pending(chatKey?: string): number {
    return chatKey === undefined ? this.total : (this.chats.get(chatKey)?.queued ?? 0);
  }

  /** Resolves once nothing is queued or in flight (whatever the outcomes). */
  drain(): Promise<void> {
    if (this.total === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  /** Refuses new work; what is queued still runs (await drain() for it). */
  close(): void {
    this.closed = true;
  }

  private chatFor(chatKey: string): Chat {
    let chat = this.chats.get(chatKey);
    if (!chat) {
      if (this.chats.size >= this.sweepAt) this.sweep();
      const { ratePerSec, burst } = this.limits.perChat;
      chat = { queued: 0, bucket: new TokenBucket(ratePerSec, burst, this.now), pausedUntil: 0 };
      this.chats.set(chatKey, chat);
    }
    return chat;
  }

  /** Forgets chats that are idle with a full bucket: a fresh entry would be identical. */
  private sweep(): void {
    for (const [key, chat] of this.chats) if (this.isForgettable(chat)) this.chats.delete(key);
    this.sweepAt = Math.max(1024, this.chats.size * 2);
  }

  private isForgettable(chat: Chat): boolean {
    return chat.queued === 0 && chat.pausedUntil <= this.now() && chat.bucket.isFull();
  }

  private isPaused(chat: Chat): boolean {
    const t = this.now();
    return chat.pausedUntil > t || this.globalPausedUntil > t;
  }

  /**
   * Whether a rate-limit window was open at any time since `t`. Pauses only
   * ever extend, so comparing the end of the latest one suffices. A typing
   * indicator that sat out a 429 is stale: sending it would only delay the reply.
   */
  private limitedSince(chat: Chat, t: number): boolean {
    return chat.pausedUntil > t || this.globalPausedUntil > t;
  }

  /** One call of the chat is done (whatever its outcome). */
  private finished(chatKey: string, chat: Chat): void {
    chat.queued--;
    if (--this.total === 0) {
      const idle = this.idle;
      this.idle = [];
      for (const resolve of idle) resolve();
    }
    if (this.isForgettable(chat) && this.chats.get(chatKey) === chat) this.chats.delete(chatKey);
  }

  private async execute(chatKey: string, chat: Chat, job: Job): Promise<unknown> {
    let transientRetries = 0;
    let rateLimits = 0;
    for (;;) {
      if (!job.essential && this.limitedSince(chat, job.queuedAt)) {
        this.log?.debug?.({ chatKey, label: job.label }, "non-essential call dropped: chat is rate-limited");
        return undefined;
      }
      await this.waitForChat(chat);
      await this.acquireGlobal();
      chat.bucket.take();
      try {
        return await job.call();
      } catch (err) {
        const code = isAdapterError(err) ? err.code : "Unknown";
        const ctx = { chatKey, label: job.label, code, essential: job.essential };
        if (code === "RateLimited") {
          rateLimits++;
          const info = this.pauseFor(chatKey, chat, err, rateLimits);
          this.log?.warn(
            { ...ctx, retryAfterMs: info.retryAfterMs, scope: info.scope, attempt: rateLimits },
            job.essential ? "rate limited; will retry the same call" : "rate limited; non-essential call dropped",
          );
          if (!job.essential) return undefined;
          continue;
        }
        if (!job.essential) {
          this.log?.warn({ ...ctx, error: errorName(err) }, "non-essential outbound call failed; skipped");
          return undefined;
        }
        if (code === "Transient" && transientRetries < this.maxTransientRetries) {
          const delayMs = this.withJitter(Math.min(MAX_BACKOFF_MS, TRANSIENT_BASE_MS * 2 ** transientRetries));
          transientRetries++;
          this.log?.warn({ ...ctx, attempt: transientRetries, delayMs }, "transient failure; retrying");
          // Sleeping here, not re-queueing, keeps the chat's later calls behind this one.
          await this.sleep(delayMs);
          continue;
        }
        throw err;
      }
    }
  }

  private pauseFor(chatKey: string, chat: Chat, err: unknown, rateLimits: number): RateLimitedInfo {
    const given = isAdapterError(err) ? err.retryAfterMs : undefined;
    const retryAfterMs =
      given !== undefined && Number.isFinite(given) && given >= 0 ? given : Math.min(MAX_BACKOFF_MS, DEFAULT_RETRY_AFTER_MS * 2 ** (rateLimits - 1));
    const scope = (err as { scope?: unknown }).scope === "global" ? "global" : "chat";
    // Jitter spreads the retries of many chats that were limited at the same instant.
    const until = this.now() + this.withJitter(retryAfterMs);
    if (scope === "global") this.globalPausedUntil = Math.max(this.globalPausedUntil, until);
    else chat.pausedUntil = Math.max(chat.pausedUntil, until);
    const info: RateLimitedInfo = { chatKey, retryAfterMs, scope };
    try {
      this.onRateLimited?.(info);
    } catch (hookErr) {
      this.log?.warn({ chatKey, error: errorName(hookErr) }, "onRateLimited hook threw");
    }
    return info;
  }

  /** Adds up to 10% (at most 1 s, at least a few ms) of random delay. */
  private withJitter(ms: number): number {
    return ms + Math.floor(this.random() * Math.min(1_000, Math.max(50, ms * 0.1)));
  }

  private async waitForChat(chat: Chat): Promise<void> {
    for (;;) {
      const wait = Math.max(chat.pausedUntil - this.now(), chat.bucket.waitMs());
      if (wait <= 0) return;
      await this.sleep(wait);
    }
  }

  /**
   * Global tokens are handed out first come, first served by one pump, so a
   * busy chat can't starve the others and waiting chats don't all wake and
   * race for each token.
   */
  private acquireGlobal(): Promise<void> {
    if (this.globalWaiters.length === 0 && this.globalPausedUntil <= this.now() && this.global.tryTake()) {
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.globalWaiters.push(resolve);
      void this.pumpGlobal();
    });
  }

  private async pumpGlobal(): Promise<void> {
    if (this.globalPumping) return;
    this.globalPumping = true;
    try {
      while (this.globalWaiters.length > 0) {
        const wait = Math.max(this.globalPausedUntil - this.now(), this.global.waitMs());
        if (wait > 0) {
          await this.sleep(wait);
          continue;
        }
        this.global.take();
        this.globalWaiters.shift()!();
      }
    } finally {
      this.globalPumping = false;
    }
  }
}

function errorName(err: unknown): string {
  return err instanceof Error ? err.name : typeof err;
}
