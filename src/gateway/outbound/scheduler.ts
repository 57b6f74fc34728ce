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
import type { ChatPace, ChatPaces } from "./chat-pace.js";
import { type Job, PacedCalls } from "./paced-call.js";
import type { OutboundSchedulerOptions, ScheduleOptions, SchedulerLog } from "./scheduler-options.js";

export type { RateLimit } from "./bot-pace.js";

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

export class OutboundScheduler {
  private readonly log: SchedulerLog | undefined;
  private readonly now: () => number;
  /** Each call's pacing and retries, and the chats' and the bot's pacing state. */
  private readonly calls: PacedCalls;
  private readonly chats: ChatPaces;
  /** A chat's calls run one at a time, in the order scheduled. */
  private readonly serial = new KeyedQueue();
  private total = 0;
  private idle: Array<() => void> = [];
  private closed = false;

  constructor(opts: OutboundSchedulerOptions) {
    this.log = opts.log;
    this.calls = new PacedCalls(opts);
    this.now = this.calls.now;
    this.chats = this.calls.chats;
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
    if (!essential && this.calls.isPaused(this.chats.of(chatKey))) {
      this.log?.debug?.({ chatKey, label }, "non-essential call dropped: chat is rate-limited");
      return Promise.resolve(undefined);
    }
    const job: Job = { call, essential, label, queuedAt: this.now() };
    return this.enqueue(chatKey, (chat) => this.calls.execute(chatKey, chat, job) as Promise<T | undefined>);
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
      return this.calls.execute(chatKey, chat, { call: fn, essential, label, queuedAt: this.now() }) as Promise<T | undefined>;
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
}
