import { createRequire } from "node:module";
import { isSpanContextValid, trace } from "@opentelemetry/api";
import pino, { type Logger } from "pino";

// pino-pretty is loaded only when a pretty log is asked for: it costs a CLI call about 100 ms.
const require = createRequire(import.meta.url);
const loadPretty = (): typeof import("pino-pretty") => require("pino-pretty") as typeof import("pino-pretty");

export type { Logger };

/**
 * Field paths that may carry a secret anywhere in a log object. pino replaces
 * them with "[redacted]". Values are also scrubbed by `redactSecrets` for
 * strings that embed a known secret (error messages, URLs).
 */
const REDACT_PATHS = [
  "token",
  "*.token",
  "botToken",
  "*.botToken",
  "appToken",
  "*.appToken",
  "apiKey",
  "*.apiKey",
  "signingSecret",
  "*.signingSecret",
  "secret",
  "*.secret",
  "password",
  "*.password",
  "authorization",
  "*.authorization",
  "headers.authorization",
  "*.headers.authorization",
  "config.TELEGRAM_BOT_TOKEN",
  "config.DISCORD_BOT_TOKEN",
  "config.SLACK_BOT_TOKEN",
  "config.SLACK_APP_TOKEN",
  "config.SLACK_SIGNING_SECRET",
  "config.OPENAI_API_KEY",
  "config.TELEGRAM_WEBHOOK_SECRET",
  "config.DATABASE_URL",
];

const secrets = new Set<string>();
/** The secrets longest first: one that contains another is masked whole, never leaving its tail in the line. */
let longestFirst: string[] = [];

/** Registers a secret value so it is masked wherever it appears in a log line. */
export function registerSecret(value: string | undefined): void {
  if (!value || value.length < 6 || secrets.has(value)) return;
  secrets.add(value);
  longestFirst = [...secrets].sort((a, b) => b.length - a.length);
}

/** Masks every registered secret, and passwords inside URLs, in a string. */
export function redactSecrets(text: string): string {
  let out = text;
  for (const s of longestFirst) if (out.includes(s)) out = out.split(s).join("[redacted]");
  return out.replace(/(\/\/[^:/@\s]+:)[^@/\s]+@/g, "$1[redacted]@");
}

export type LogFormat = "json" | "pretty";

export interface LoggerOptions {
  level?: string;
  destination?: NodeJS.WritableStream;
  name?: string;
  /**
   * `json` (one object a line), `pretty` (pino-pretty, for people), or
   * unset: pretty when the log goes to a terminal, JSON otherwise.
   */
  format?: LogFormat;
}

/** The format an unset LOG_FORMAT means: pretty only when the log's own stream (stderr by default) is a terminal. */
export function defaultLogFormat(destination?: NodeJS.WritableStream): LogFormat {
  const tty = destination ? (destination as { isTTY?: boolean }).isTTY === true : process.stderr.isTTY === true;
  return tty ? "pretty" : "json";
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const format = opts.format ?? defaultLogFormat(opts.destination);
  const destination =
    format === "pretty"
      ? loadPretty()({
          destination: (opts.destination as pino.DestinationStream | undefined) ?? 2,
          sync: true,
          colorize: (opts.destination ? (opts.destination as { isTTY?: boolean }).isTTY : process.stderr.isTTY) === true,
          translateTime: "SYS:yyyy-mm-dd HH:MM:ss.l",
          ignore: "pid,hostname,name",
          singleLine: true,
        })
      : ((opts.destination as pino.DestinationStream | undefined) ?? pino.destination({ dest: 2, sync: false }));
  const logger = pino(
    {
      name: opts.name ?? "switchboard",
      level: opts.level ?? "info",
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: REDACT_PATHS, censor: "[redacted]" },
      formatters: { level: (label) => ({ level: label }) },
      mixin: traceFields,
      hooks: {
        // Messages and serialized errors can embed a token (a URL, an SDK error): scrub them last.
        streamWrite: (line) => redactSecrets(line),
      },
    },
    destination,
  );
  return withoutRepeatedBindings(logger);
}

/**
 * A line logged inside a traced operation names its trace and span, so a log
 * search finds the trace (src/telemetry). The API alone is loaded here: with
 * tracing off there is no active span and the line is as before.
 */
function traceFields(): Record<string, string> {
  const span = trace.getActiveSpan();
  if (!span) return {};
  const c = span.spanContext();
  return isSpanContextValid(c) ? { trace_id: c.traceId, span_id: c.spanId } : {};
}

/**
 * pino writes a child's bindings after its parent's without merging them, so
 * a key bound twice (the gateway binds `platform` for an adapter, which binds
 * it again) appears twice in every line. Children made here drop the keys
 * their parent already binds to the same value; a different value is kept.
 */
type ChildFn = (this: Logger, bindings: pino.Bindings, options?: pino.ChildLoggerOptions) => Logger;

function withoutRepeatedBindings(logger: Logger, pinoChild: ChildFn = logger.child as unknown as ChildFn): Logger {
  // A child is made from its parent's prototype chain, so pino's own child() is called with the parent as `this`.
  logger.child = ((bindings: pino.Bindings, options?: pino.ChildLoggerOptions) => {
    const bound = logger.bindings();
    const fresh = Object.fromEntries(Object.entries(bindings).filter(([k, v]) => !(k in bound) || bound[k] !== v));
    return withoutRepeatedBindings(pinoChild.call(logger, fresh, options), pinoChild);
  }) as unknown as Logger["child"];
  return logger;
}

/**
 * DATABASE_URL as it may be shown: a file path as it is, a server URL without
 * its password (or any query parameter that might carry one).
 */
export function describeDatabase(url: string): string {
  if (url.startsWith("file:")) return url;
  try {
    const u = new URL(url);
    if (u.password) u.password = "[redacted]";
    for (const k of [...u.searchParams.keys()]) if (/pass|secret|token|key/i.test(k)) u.searchParams.set(k, "[redacted]");
    return u.toString().replace(/%5Bredacted%5D/g, "[redacted]");
  } catch {
    return redactSecrets(url).replace(/:\/\/([^:/@]+):[^@]*@/, "://$1:[redacted]@");
  }
}

/** An error as a log field: name, message and code, nothing else (no stacks full of payloads). */
export function errInfo(err: unknown): Record<string, unknown> {
  return err instanceof Error ? { name: err.name, message: err.message, code: (err as { code?: unknown }).code } : { message: String(err) };
}

/** A logger that drops everything, for tests and library defaults. */
export const silentLogger: Logger = pino({ level: "silent" });
