/**
 * One platform call of a chat as the scheduler runs it (scheduler.ts's header has the rules): it
 * waits for the chat's and the bot-wide tokens, sits out a 429 and retries the same call, backs off
 * on a 'Transient' failure, and drops a non-essential call rather than delay a reply. The chats'
 * and the bot's pacing state lives here; the per-chat queue stays with the scheduler.
 */
import { SpanKind, type Span } from "@opentelemetry/api";
import { hashId, inSpan, tracing } from "../../telemetry/index.js";
import { isAdapterError } from "../contract.js";
import { LocalBudget } from "./bot-budget.js";
import { BotPace, MAX_BACKOFF_MS, retryAfterOf } from "./bot-pace.js";
import { type ChatPace, ChatPaces } from "./chat-pace.js";
import type { OutboundSchedulerOptions, RateLimitedInfo, SchedulerLog } from "./scheduler-options.js";

/** One call waiting for its turn, or being tried. */
export interface Job {
  call: () => Promise<unknown>;
  essential: boolean;
  label: string;
  queuedAt: number;
}

const TRANSIENT_BASE_MS = 500;

export class PacedCalls {
  readonly now: () => number;
  private readonly log: SchedulerLog | undefined;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly random: () => number;
  private readonly maxTransientRetries: number;
  private readonly onRateLimited: ((info: RateLimitedInfo) => void) | undefined;
  private readonly platform: string;

  readonly chats: ChatPaces;
  private readonly global: BotPace;

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

  isPaused(chat: ChatPace): boolean {
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

  /** One platform call, paced and retried, as one span (its 429 waits and retries are the span's events). */
  execute(chatKey: string, chat: ChatPace, job: Job): Promise<unknown> {
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
