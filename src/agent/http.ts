import { httpError, redact, safeUrl } from "./http-error.js";
import { aborted, AgentError, type AgentLog } from "./types.js";

export interface HttpOptions {
  url: string;
  headers: Record<string, string>;
  body: string;
  signal: AbortSignal;
  /** Until response headers arrive. */
  connectTimeoutMs: number;
  /** Longest silence allowed between body reads. */
  idleTimeoutMs: number;
  /** Retries after the first attempt, for 429, 5xx and failed connections. */
  maxRetries: number;
  retryBaseMs: number;
  /** A server asking to wait longer than this gets a RateLimited error instead of a stalled turn. */
  maxRetryDelayMs: number;
  fetch: typeof fetch;
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  log: AgentLog;
  /** Removed from every text that can reach an error message or a log line. */
  secret: string | undefined;
}

/** Milliseconds to wait from `retry-after-ms`, or `retry-after` as seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(headers: Headers, now: number = Date.now()): number | undefined {
  const ms = headers.get("retry-after-ms");
  if (ms !== null && /^\s*\d+(\.\d+)?\s*$/.test(ms)) return Math.ceil(Number(ms));
  const v = headers.get("retry-after");
  if (v === null) return undefined;
  if (/^\s*\d+(\.\d+)?\s*$/.test(v)) return Math.ceil(Number(v) * 1000);
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

export function defaultSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(aborted());
    // Kept referenced: a one-shot CLI turn waiting out a 429 has nothing else holding the process open.
    const t = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(aborted());
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * One HTTP attempt: its own AbortController, linked to the turn's signal and
 * to the connect/idle timers, so whichever fires first closes the request and
 * `classify` can tell which it was.
 */
export class Attempt {
  readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private timedOut: "connect" | "idle" | undefined;
  private reading = false;
  /** The body was read to its end: the request is over, and there is nothing left to abort. */
  private ended = false;
  private readonly onUserAbort = () => this.controller.abort();

  constructor(
    private readonly user: AbortSignal,
    private readonly opts: Pick<HttpOptions, "url" | "connectTimeoutMs" | "idleTimeoutMs" | "secret">,
  ) {
    user.addEventListener("abort", this.onUserAbort, { once: true });
    if (user.aborted) this.controller.abort();
  }

  arm(kind: "connect" | "idle"): void {
    this.disarm();
    if (kind === "idle") this.reading = true;
    const ms = kind === "connect" ? this.opts.connectTimeoutMs : this.opts.idleTimeoutMs;
    // Unref'd: the open socket keeps the process alive while we wait, the timer need not.
    this.timer = setTimeout(() => {
      this.timedOut = kind;
      this.controller.abort();
    }, ms).unref();
  }

  disarm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Marks the body as read to its end (readBodyText): dispose then has no request left to close. */
  end(): void {
    this.ended = true;
  }

  /**
   * Always safe to call; closes the request if it is still open. A request
   * whose body was read to its end is not aborted: the abort would only build
   * an AbortError and run the fetch's abort steps for nothing (issue 31: a
   * third of a millisecond per model call on the bench).
   */
  dispose(): void {
    this.disarm();
    this.user.removeEventListener("abort", this.onUserAbort);
    if (!this.ended) this.controller.abort();
  }

  classify(e: unknown): AgentError {
    if (this.user.aborted) return aborted();
    const where = safeUrl(this.opts.url);
    if (this.timedOut === "connect") {
      return new AgentError(
        "Timeout",
        `The model server at ${where} did not answer within ${this.opts.connectTimeoutMs} ms. Check that it is running and reachable, or raise the connect timeout.`,
        { cause: e },
      );
    }
    if (this.timedOut === "idle") {
      return new AgentError(
        "Timeout",
        `The model server at ${where} went silent for ${this.opts.idleTimeoutMs} ms in the middle of a reply. Retry, or raise the idle timeout if the model is slow.`,
        { cause: e },
      );
    }
    if (e instanceof AgentError) return e;
    const cause = e instanceof Error && e.cause instanceof Error ? e.cause : e;
    const code = (cause as { code?: unknown } | undefined)?.code;
    const text = cause instanceof Error ? cause.message : String(cause);
    const detail = redact(typeof code === "string" && !text.includes(code) ? `${text}, ${code}` : text, this.opts.secret);
    if (this.reading) {
      return new AgentError(
        "Upstream",
        `The connection to the model server at ${where} broke in the middle of a reply (${detail}). Send the message again; if it keeps happening, check the server's logs.`,
        { cause: e },
      );
    }
    return new AgentError("Upstream", `Could not talk to the model server at ${where} (${detail}). Check OPENAI_BASE_URL and that the server is running.`, {
      cause: e,
    });
  }
}

/**
 * POSTs with bounded retries on 429, 5xx and failed connections, honouring
 * the server's retry-after. Returns the OK response with its live Attempt; the
 * caller reads the body and must dispose the attempt. Retrying only happens
 * before any body byte is read, so no text is ever streamed twice.
 */
export async function postWithRetry(o: HttpOptions): Promise<{ response: Response; attempt: Attempt }> {
  for (let n = 0; ; n++) {
    if (o.signal.aborted) throw aborted();
    const attempt = new Attempt(o.signal, o);
    attempt.arm("connect");
    let response: Response;
    try {
      response = await o.fetch(o.url, { method: "POST", headers: o.headers, body: o.body, signal: attempt.controller.signal });
    } catch (e) {
      attempt.dispose();
      const err = attempt.classify(e);
      if (err.code !== "Upstream" || n >= o.maxRetries) throw err;
      await backoff(o, n, undefined, err.message);
      continue;
    }
    attempt.disarm();
    if (response.ok) return { response, attempt };

    const body = await readErrorBody(response, attempt);
    attempt.dispose();
    if (o.signal.aborted) throw aborted();
    const retryAfterMs = parseRetryAfter(response.headers);
    const retryable = response.status === 429 || response.status >= 500;
    if (retryable && n < o.maxRetries && (retryAfterMs === undefined || retryAfterMs <= o.maxRetryDelayMs)) {
      await backoff(o, n, retryAfterMs, `HTTP ${response.status}`);
      continue;
    }
    const location = response.status >= 300 && response.status < 400 ? response.headers.get("location") : null;
    throw httpError(response.status, redact(body, o.secret), retryAfterMs, o, n + 1, location === null ? undefined : redact(location, o.secret));
  }
}

async function backoff(o: HttpOptions, n: number, retryAfterMs: number | undefined, why: string): Promise<void> {
  // Full-ish jitter keeps many sessions that failed together from retrying in lockstep.
  const exp = Math.min(o.maxRetryDelayMs, o.retryBaseMs * 2 ** n);
  const delayMs = retryAfterMs ?? Math.round(exp * (0.5 + Math.random() / 2));
  o.log.warn({ url: safeUrl(o.url), attempt: n + 1, delayMs, reason: why }, "model request failed; retrying");
  await o.sleep(delayMs, o.signal);
}

async function readErrorBody(response: Response, attempt: Attempt): Promise<string> {
  attempt.arm("idle");
  try {
    return (await response.text()).slice(0, 500).trim();
  } catch {
    return "";
  } finally {
    attempt.disarm();
  }
}

/** Decoded body text; the idle timer runs only while waiting on the server, not while the caller works. */
export async function* readBodyText(body: ReadableStream<Uint8Array>, attempt: Attempt): AsyncGenerator<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let ended = false;
  try {
    for (;;) {
      attempt.arm("idle");
      const { done, value } = await reader.read();
      attempt.disarm();
      if (done) {
        ended = true;
        attempt.end();
        break;
      }
      const text = decoder.decode(value, { stream: true });
      if (text) yield text;
    }
    const tail = decoder.decode();
    if (tail) yield tail;
  } finally {
    attempt.disarm();
    if (!ended && !(await endedAlready(reader))) reader.cancel().catch(() => {});
    else attempt.end();
  }
}

/**
 * Whether a body the caller stopped reading early (at the stream's [DONE])
 * has in fact ended: its end has usually arrived with the [DONE], and a
 * read then answers before the next turn of the event loop. Only a body
 * still open is cancelled, which aborts the request (an AbortError and the
 * fetch's abort steps per call), so a server that keeps the stream open
 * after [DONE] is still closed at once, as before.
 */
async function endedAlready(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<boolean> {
  let timer: NodeJS.Immediate | undefined;
  const later = new Promise<"later">((resolve) => (timer = setImmediate(resolve, "later")));
  const next = reader.read().then(
    (r) => r.done,
    () => false,
  );
  const first = await Promise.race([next, later]);
  clearImmediate(timer);
  return first === true;
}
