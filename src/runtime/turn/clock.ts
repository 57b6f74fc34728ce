/**
 * A turn's clock: AGENT_TIMEOUT, which aborts the turn when it runs out and
 * stops while a person decides on a tool call (hold), and the typing
 * indicator, which first shows when the turn has run `typing.delayMs` (a
 * fast reply needs none, and each indicator is a platform call under the
 * same rate limits as replies), then every `typing.intervalMs`.
 */
export class TurnClock {
  #timedOut = false;
  #timer: NodeJS.Timeout;
  #left: number;
  #since = Date.now();
  #holds = 0;
  readonly #typingStart: NodeJS.Timeout;
  #typing: NodeJS.Timeout | undefined;

  constructor(
    private readonly abort: AbortController,
    readonly timeoutMs: number,
    typing: { show(): void; delayMs: number; intervalMs: number },
  ) {
    this.#left = timeoutMs;
    this.#timer = this.#start(timeoutMs);
    this.#typingStart = setTimeout(() => {
      typing.show();
      this.#typing = setInterval(typing.show, typing.intervalMs);
      this.#typing.unref?.();
    }, typing.delayMs);
    this.#typingStart.unref?.();
  }

  /** Whether the turn was aborted because its time ran out. */
  get timedOut(): boolean {
    return this.#timedOut;
  }

  /** Stops the timeout until the returned function is called (idempotent); the time left resumes then. */
  readonly hold = (): (() => void) => {
    if (this.#holds++ === 0) {
      clearTimeout(this.#timer);
      this.#left = Math.max(1_000, this.#left - (Date.now() - this.#since));
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      if (--this.#holds === 0 && !this.abort.signal.aborted) {
        this.#since = Date.now();
        this.#timer = this.#start(this.#left);
      }
    };
  };

  /** The turn is over: no timeout, no more typing. */
  stop(): void {
    clearTimeout(this.#timer);
    clearTimeout(this.#typingStart);
    clearInterval(this.#typing);
  }

  #start(ms: number): NodeJS.Timeout {
    const timer = setTimeout(() => {
      this.#timedOut = true;
      this.abort.abort(new Error("turn timeout"));
    }, ms);
    timer.unref?.();
    return timer;
  }
}
