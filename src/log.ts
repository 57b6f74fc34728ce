import pino, { type Logger } from "pino";

export type { Logger };

/**
 * Field paths that may carry a secret anywhere in a log object. pino replaces
 * them with "[redacted]". Values are also scrubbed by `redactSecrets` for
 * strings that embed a known secret (error messages, URLs).
 */
const REDACT_PATHS = [
  "token", "*.token", "botToken", "*.botToken", "appToken", "*.appToken",
  "apiKey", "*.apiKey", "signingSecret", "*.signingSecret", "secret", "*.secret",
  "password", "*.password", "authorization", "*.authorization", "headers.authorization",
  "*.headers.authorization", "config.TELEGRAM_BOT_TOKEN", "config.DISCORD_BOT_TOKEN",
  "config.SLACK_BOT_TOKEN", "config.SLACK_APP_TOKEN", "config.SLACK_SIGNING_SECRET",
  "config.OPENAI_API_KEY", "config.TELEGRAM_WEBHOOK_SECRET", "config.DATABASE_URL",
];

const secrets = new Set<string>();

/** Registers a secret value so it is masked wherever it appears in a log line. */
export function registerSecret(value: string | undefined): void {
  if (value && value.length >= 6) secrets.add(value);
}

/** Masks every registered secret, and passwords inside URLs, in a string. */
export function redactSecrets(text: string): string {
  let out = text;
  for (const s of secrets) if (out.includes(s)) out = out.split(s).join("[redacted]");
  return out.replace(/(\/\/[^:/@\s]+:)[^@/\s]+@/g, "$1[redacted]@");
}

export function createLogger(opts: { level?: string; destination?: NodeJS.WritableStream; name?: string } = {}): Logger {
  return pino(
    {
      name: opts.name ?? "switchboard",
      level: opts.level ?? "info",
      redact: { paths: REDACT_PATHS, censor: "[redacted]" },
      formatters: { level: (label) => ({ level: label }) },
      hooks: {
        // Messages and serialized errors can embed a token (a URL, an SDK error): scrub them last.
        streamWrite: (line) => redactSecrets(line),
      },
    },
    (opts.destination as pino.DestinationStream | undefined) ?? pino.destination({ dest: 2, sync: false }),
  );
}

/** An error as a log field: name, message and code, nothing else (no stacks full of payloads). */
export function errInfo(err: unknown): Record<string, unknown> {
  return err instanceof Error ? { name: err.name, message: err.message, code: (err as { code?: unknown }).code } : { message: String(err) };
}

/** A logger that drops everything, for tests and library defaults. */
export const silentLogger: Logger = pino({ level: "silent" });
