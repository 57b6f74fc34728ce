/**
 * Telegram's bot-wide limit as the fake enforces it when asked
 * (`FakeTelegramOptions.botLimit`): at most `perSecond` messages accepted in
 * any 1 s window of the fake's own receive times; a send beyond it is
 * answered 429 with `retry_after`, as Telegram does, and counted.
 */
export interface BotLimitOptions {
  perSecond: number;
  /** The fake's clock, injectable for tests. Default Date.now. */
  now?: () => number;
}

/** Calls that post a message (a chat action or an edit is not one). */
export function postsMessage(method: string): boolean {
  return (method.startsWith("send") && method !== "sendChatAction") || method === "copyMessage" || method === "forwardMessage";
}

export class BotLimit {
  readonly now: () => number;
  /** Receive times of the messages accepted in the last second, oldest first. */
  readonly #accepted: number[] = [];
  /** Sends answered 429 because the bot was over its limit. */
  rejected = 0;

  constructor(readonly opts: BotLimitOptions) {
    this.now = opts.now ?? Date.now;
  }

  /** Whether a message received at `at` is over the limit; if not, it counts towards it. */
  over(at: number): boolean {
    while (this.#accepted.length > 0 && at - this.#accepted[0]! >= 1000) this.#accepted.shift();
    if (this.#accepted.length >= this.opts.perSecond) {
      this.rejected++;
      return true;
    }
    this.#accepted.push(at);
    return false;
  }
}
