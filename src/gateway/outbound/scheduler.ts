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
 *   (global) bucket, sized from the adapter's declared AdapterLimits. In
 *   shared mode the bot-wide bucket is the database's, so every process of
 *   the bot spends one budget (bot-budget.ts).
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
import { SpanKind, type Span } from "@opentelemetry/api";
import { hashId, inSpan, tracing } from "../../telemetry/index.js";
import { isAdapterError } from "../contract.js";
import { type BotBudget, LocalBudget } from "./bot-budget.js";
import { BotPace, MAX_BACKOFF_MS, type RateLimit, retryAfterOf } from "./bot-pace.js";
import { type ChatPace, ChatPaces } from "./chat-pace.js";

export type { RateLimit } from "./bot-pace.js";

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
  /** The platform the calls go to, for their spans (src/telemetry). */
  platform?: string;
  /** Where the bot-wide tokens come from. Default: a bucket of this process sized by limits.global; in shared mode the database's (bot-budget.ts). */
  botBudget?: BotBudget;
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

const TRANSIENT_BASE_MS = 500;

export class OutboundScheduler {
  private readonly log: SchedulerLog | undefined;
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly random: () => number;
  private readonly maxTransientRetries: number;
  private readonly onRateLimited: ((info: RateLimitedInfo) => void) | undefined;
  private readonly platform: string;

  private readonly chats: ChatPaces;
  /** A chat's calls run one at a time, in the order scheduled. */
  private readonly serial = new KeyedQueue();
  private readonly global: BotPace;
  private total = 0;
  private idle: Array<() => void> = [];
  private closed = false;

  constructor(opts: OutboundSchedulerOptions) {
    this.log = opts.log;
    this.now = opts.now ?? Date.now;
    this.sleep = opts.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.random = opts.random ?? Math.random;
    this.maxTransientRetries = opts.maxTransientRetries ?? 5;
    this.onRateLimited = opts.onRateLimited;
    this.platform = opts.platform ?? "platform";
    this.global = new BotPace(opts.botBudget ?? new LocalBudget(opts.limits.global, this.now), this.now, this.sleep);
    this.chats = new ChatPaces(opts.limits.perChat, this.now, this.sleep);
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
    if (!essential && this.isPaused(this.chats.of(chatKey))) {
      this.log?.debug?.({ chatKey, label }, "non-essential call dropped: chat is rate-limited");
      return Promise.resolve(undefined);
    }
    const job: Job = { call, essential, label, queuedAt: this.now() };
    return this.enqueue(chatKey, (chat) => this.execute(chatKey, chat, job) as Promise<T | undefined>);
  }

  /**
   * Queues `work` behind the chat's earlier work and gives it the chat to itself: the calls it makes through the
   * lane run at once, each paced and retried as `schedule`'s are, and
   * nothing else of the chat runs until `work` settles. A lane's call made
   * after close() is refused as `schedule` would refuse it. Never call
   * `schedule` or `hold` for the same chat from inside `work`: it would wait
   * for itself.
   */
  hold<T>(chatKey: string, work: (lane: ChatLane) => Promise<T>): Promise<T> {
    return this.enqueue(chatKey, (chat) => work(this.laneOf(chatKey, chat)));
  }

  private enqueue<T>(chatKey: string, run: (chat: ChatPace) => Promise<T>): Promise<T> {
    const chat = this.chats.of(chatKey);
    chat.queued++;
    this.total++;
    return this.serial.run(chatKey, () => run(chat)).finally(() => this.finished(chatKey, chat));
  }

  private laneOf(chatKey: string, chat: ChatPace): ChatLane {
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
    return chatKey === undefined ? this.total : this.chats.queued(chatKey);
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

  private isPaused(chat: ChatPace): boolean {
    const t = this.now();
    return chat.pausedUntil > t || this.global.pausedUntil > t;
  }

  /**
   * Whether a rate-limit window was open at any time since `t`. Pauses only
   * ever extend, so comparing the end of the latest one suffices. A typing
   * indicator that sat out a 429 is stale: sending it would only delay the reply.
   */
  private limitedSince(chat: ChatPace, t: number): boolean {
    return chat.pausedUntil > t || this.global.pausedUntil > t;
  }

  /** One call of the chat is done (whatever its outcome). */
  private finished(chatKey: string, chat: ChatPace): void {
    chat.queued--;
    if (--this.total === 0) {
      const idle = this.idle;
      this.idle = [];
      for (const resolve of idle) resolve();
    }
    this.chats.settled(chatKey, chat);
  }

  /** One platform call, paced and retried, as one span (its 429 waits and retries are the span's events). */
  private execute(chatKey: string, chat: ChatPace, job: Job): Promise<unknown> {
    const attributes = tracing()
      ? {
          "switchboard.platform": this.platform,
          "switchboard.outbound.call": job.label,
          "switchboard.chat.key_hash": hashId(chatKey)!,
          "switchboard.essential": job.essential,
        }
      : undefined;
    return inSpan(`${job.label} ${this.platform}`, { kind: SpanKind.CLIENT, attributes }, (span) => this.attempts(chatKey, chat, job, span));
  }

  private async attempts(chatKey: string, chat: ChatPace, job: Job, span: Span): Promise<unknown> {
    let transientRetries = 0;
    let rateLimits = 0;
    for (;;) {
      if (!job.essential && this.limitedSince(chat, job.queuedAt)) {
        this.log?.debug?.({ chatKey, label: job.label }, "non-essential call dropped: chat is rate-limited");
        return undefined;
      }
      await this.chats.ready(chat);
      await this.global.acquire();
      chat.bucket.take();
      try {
        return await job.call();
      } catch (err) {
        const code = isAdapterError(err) ? err.code : "Unknown";
        const ctx = { chatKey, label: job.label, code, essential: job.essential };
        if (code === "RateLimited") {
          rateLimits++;
          const info = this.pauseFor(chatKey, chat, err, rateLimits);
          span.addEvent("rate_limited", { "switchboard.retry_after_ms": info.retryAfterMs, "switchboard.rate_limit.scope": info.scope, attempt: rateLimits });
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
          span.addEvent("retry", { "error.type": code, "switchboard.delay_ms": delayMs, attempt: transientRetries });
          this.log?.warn({ ...ctx, attempt: transientRetries, delayMs }, "transient failure; retrying");
          // Sleeping here, not re-queueing, keeps the chat's later calls behind this one.
          await this.sleep(delayMs);
          continue;
        }
        throw err;
      }
    }
  }

  private pauseFor(chatKey: string, chat: ChatPace, err: unknown, rateLimits: number): RateLimitedInfo {
    const retryAfterMs = retryAfterOf(err, rateLimits);
    const scope = (err as { scope?: unknown }).scope === "global" ? "global" : "chat";
    // Jitter spreads the retries of many chats that were limited at the same instant.
    const until = this.now() + this.withJitter(retryAfterMs);
    if (scope === "global") this.global.pauseUntil(until);
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
}

function errorName(err: unknown): string {
  return err instanceof Error ? err.name : typeof err;
}
