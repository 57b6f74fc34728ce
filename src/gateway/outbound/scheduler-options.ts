/** What the outbound scheduler (scheduler.ts) is built with, and what one scheduled call may say about itself. */
import type { BotBudget } from "./bot-budget.js";
import type { RateLimit } from "./bot-pace.js";

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
