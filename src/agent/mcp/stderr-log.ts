/**
 * A stdio server's stderr in the gateway's log, bounded: it is a third party's
 * output, so a chatty or looping server must not flood the log. Each line is
 * logged at debug level, cut to MAX_LINE_CHARS, at most `lines` per window of
 * `windowMs` per server; past that lines are counted, and one line says how
 * many were dropped (when the window ends, or when the server's stderr ends).
 */
import { StringDecoder } from "node:string_decoder";
import type { AgentLog } from "../types.js";
import type { StderrSink } from "./stdio-transport.js";

export const MAX_LINE_CHARS = 500;

export interface StderrLimits {
  /** Lines logged per window; the rest are counted. Default 100. */
  lines: number;
  /** Default 60 s. */
  windowMs: number;
}

export const DEFAULT_STDERR_LIMITS: StderrLimits = { lines: 100, windowMs: 60_000 };

/** One server's budget, across its restarts; sink() is one run's stderr. */
export class StderrLog {
  #windowEnds = 0;
  #logged = 0;
  #dropped = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly server: string,
    private readonly log: AgentLog,
    private readonly limits: StderrLimits = DEFAULT_STDERR_LIMITS,
  ) {}

  /** A sink for one run of the server: its own decoding and partial line, this log's budget. */
  sink(): StderrSink {
    const decoder = new StringDecoder("utf8");
    // The current line's first MAX_LINE_CHARS (the rest of a longer line is not kept).
    let line = "";
    let pending = false;
    const take = (text: string, from: number, to: number) => {
      pending = true;
      if (line.length < MAX_LINE_CHARS) line += text.slice(from, Math.min(to, from + MAX_LINE_CHARS - line.length));
    };
    const finish = () => {
      if (pending) this.line(line.replace(/\r$/, ""));
      line = "";
      pending = false;
    };
    const feed = (text: string) => {
      let from = 0;
      for (let nl = text.indexOf("\n"); nl >= 0; nl = text.indexOf("\n", from)) {
        take(text, from, nl);
        finish();
        from = nl + 1;
      }
      if (from < text.length) take(text, from, text.length);
    };
    let ended = false;
    return {
      write: (chunk) => {
        if (!ended) feed(decoder.write(chunk));
      },
      end: () => {
        if (ended) return;
        ended = true;
        feed(decoder.end());
        finish();
        this.flush();
      },
    };
  }

  /** One line: logged while the window's budget lasts, else counted. Blank lines are neither. */
  line(text: string): void {
    if (!text.trim()) return;
    const now = Date.now();
    if (now >= this.#windowEnds) {
      this.flush();
      this.#windowEnds = now + this.limits.windowMs;
      this.#logged = 0;
    }
    if (this.#logged < this.limits.lines) {
      this.#logged++;
      this.log.debug({ server: this.server, stderr: text.slice(0, MAX_LINE_CHARS) }, "mcp server stderr");
      return;
    }
    this.#dropped++;
    if (!this.#timer) {
      this.#timer = setTimeout(() => this.flush(), Math.max(0, this.#windowEnds - now));
      this.#timer.unref();
    }
  }

  /** Says how many lines were dropped since the last time it said so, if any. */
  flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (!this.#dropped) return;
    const dropped = this.#dropped;
    this.#dropped = 0;
    this.log.debug(
      { server: this.server, dropped, limit: this.limits.lines, windowMs: this.limits.windowMs },
      `mcp server stderr: ${dropped} more lines not logged (at most ${this.limits.lines} per ${Math.round(this.limits.windowMs / 1000)} s per server)`,
    );
  }
}
