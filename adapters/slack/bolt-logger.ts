import { LogLevel, type Logger as SlackLogger } from "@slack/bolt";
import type { Logger } from "../../src/log.js";

/**
 * Bolt's and the WebClient's log calls, into pino. Their debug output
 * includes whole event payloads (user text), so it goes to trace; only
 * string arguments and error names are kept, never objects that could carry
 * a request (and its token).
 */
export function boltLogger(log: Logger): SlackLogger {
  const line = (args: unknown[]): string =>
    args
      .map((a) =>
        typeof a === "string"
          ? a
          : a instanceof Error
            ? `${a.name}${(a as { code?: unknown }).code ? ` ${String((a as { code?: unknown }).code)}` : ""}`
            : typeof a,
      )
      .join(" ");
  let level = LogLevel.WARN;
  return {
    debug: (...a: unknown[]) => log.trace(line(a)),
    info: (...a: unknown[]) => log.debug(line(a)),
    warn: (...a: unknown[]) => log.warn(line(a)),
    error: (...a: unknown[]) => log.error(line(a)),
    setLevel: (l: LogLevel) => {
      level = l;
    },
    getLevel: () => level,
    setName: () => undefined,
  };
}
