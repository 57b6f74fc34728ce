import { z } from "zod";

/**
 * Configuration comes from the environment only, validated here at the edge.
 * A bad value stops the start with one line naming the variable and the fix.
 * `.env.example` documents every variable; keep the two in step
 * (test/config.test.ts checks that they match).
 */

const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

const duration = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((v, ctx) => {
      const m = DURATION.exec(v.trim());
      if (!m) {
        ctx.addIssue({ code: "custom", message: `must be a duration such as 600s, 10m or 1h (got "${v}")` });
        return z.NEVER;
      }
      return Math.round(Number(m[1]) * UNIT_MS[m[2] ?? "s"]!);
    });

const bool = (fallback: boolean) =>
  z
    .string()
    .default(String(fallback))
    .transform((v, ctx) => {
      const s = v.trim().toLowerCase();
      if (["1", "true", "yes", "on"].includes(s)) return true;
      if (["0", "false", "no", "off"].includes(s)) return false;
      ctx.addIssue({ code: "custom", message: `must be true or false (got "${v}")` });
      return z.NEVER;
    });

const int = (fallback: number, min: number, max: number) =>
  z
    .string()
    .default(String(fallback))
    .transform((v, ctx) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < min || n > max) {
        ctx.addIssue({ code: "custom", message: `must be a whole number from ${min} to ${max} (got "${v}")` });
        return z.NEVER;
      }
      return n;
    });

const list = () =>
  z
    .string()
    .default("")
    .transform((v) => v.split(",").map((s) => s.trim()).filter(Boolean));

const optionalString = () =>
  z
    .string()
    .optional()
    .transform((v) => (v && v.trim() ? v.trim() : undefined));

const url = (what: string, opts: { trailingSlash?: "forbid" | "require" } = {}) =>
  optionalString().superRefine((v, ctx) => {
    if (v === undefined) return;
    let parsed: URL;
    try {
      parsed = new URL(v);
    } catch {
      ctx.addIssue({ code: "custom", message: `must be an absolute http(s) URL for ${what}` });
      return;
    }
    if (!/^https?:$/.test(parsed.protocol)) ctx.addIssue({ code: "custom", message: `must use http or https for ${what}` });
    if (opts.trailingSlash === "forbid" && v.endsWith("/")) ctx.addIssue({ code: "custom", message: `must not end with "/" (${what})` });
    if (opts.trailingSlash === "require" && !v.endsWith("/")) ctx.addIssue({ code: "custom", message: `must end with "/" (${what})` });
  });

const schema = z.object({
  DATABASE_URL: z
    .string()
    .default("file:./data/switchboard.db")
    .refine((v) => v.startsWith("file:") || /^postgres(ql)?:\/\//.test(v), "must start with file: (SQLite) or postgresql:// (PostgreSQL)"),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  HTTP_HOST: z.string().default("127.0.0.1"),
  HTTP_PORT: int(8787, 0, 65535),
  CONSOLE_ENABLED: bool(true),
  SHUTDOWN_GRACE: duration("25s"),

  INBOUND_TTL: duration("10m"),
  DM_POLICY: z.enum(["pairing", "allowlist", "open"]).default("pairing"),
  ALLOW_FROM: list(),
  ADMIN_USERS: list(),
  ADMIN_COMMANDS: z
    .string()
    .default("approve")
    .transform((v) => v.split(",").map((s) => s.trim().replace(/^\//, "").toLowerCase()).filter(Boolean)),
  GROUP_REQUIRE_MENTION: bool(true),
  THREAD_SESSIONS: z.enum(["own", "parent"]).default("own"),
  BUSY_POLICY: z.enum(["queue", "collect", "interrupt"]).default("queue"),
  MAX_INBOUND_CHARS: int(16_000, 1, 1_000_000),
  SHARED_DATABASE: bool(false),

  OPENAI_BASE_URL: url("the OpenAI-compatible API, e.g. https://api.openai.com/v1"),
  OPENAI_API_KEY: optionalString(),
  OPENAI_MODEL: optionalString(),
  MODEL_TEMPERATURE: optionalString(),
  MODEL_MAX_OUTPUT_TOKENS: optionalString(),
  MODEL_THINKING_LEVEL: optionalString(),
  AGENT_TIMEOUT: duration("120s"),
  TOOL_MAX_ROUNDS: int(4, 0, 50),
  PERSONAS: optionalString(),
  CONTEXT_MAX_MESSAGES: int(40, 1, 10_000),
  LIVE_SESSIONS_MAX: int(2000, 10, 10_000_000),
  CONTEXT_MAX_CHARS: int(24_000, 100, 10_000_000),
  REFLECT_EVERY_TURNS: int(20, 0, 100_000),
  REFLECT_SWEEP_INTERVAL: duration("15m"),

  TELEGRAM_BOT_TOKEN: optionalString(),
  TELEGRAM_API_ROOT: url("the Telegram Bot API root", { trailingSlash: "forbid" }),
  TELEGRAM_MODE: z.enum(["polling", "webhook"]).default("polling"),
  TELEGRAM_WEBHOOK_SECRET: optionalString(),
  TELEGRAM_WEBHOOK_URL: url("the public webhook URL Telegram will call"),

  DISCORD_BOT_TOKEN: optionalString(),
  DISCORD_API_URL: url("the Discord REST API, e.g. http://127.0.0.1:PORT/api", { trailingSlash: "forbid" }),
  DISCORD_ALLOW_BOTS: bool(false),
  DISCORD_MENTION_ROLES: list(),
  DISCORD_SHARD_ID: optionalString(),
  DISCORD_SHARD_COUNT: optionalString(),

  SLACK_BOT_TOKEN: optionalString(),
  SLACK_SIGNING_SECRET: optionalString(),
  SLACK_APP_TOKEN: optionalString(),
  SLACK_API_URL: url("the Slack Web API base, e.g. http://127.0.0.1:PORT/api/", { trailingSlash: "require" }),
});

export type Config = z.infer<typeof schema>;
export const CONFIG_KEYS = Object.keys(schema.shape) as Array<keyof Config>;

/** Secret-bearing variables: never logged, never echoed in errors. */
export const SECRET_KEYS: ReadonlyArray<keyof Config> = [
  "OPENAI_API_KEY", "TELEGRAM_BOT_TOKEN", "TELEGRAM_WEBHOOK_SECRET", "DISCORD_BOT_TOKEN",
  "SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN",
];

export class ConfigError extends Error {
  override readonly name = "ConfigError";
  readonly code = "Invalid";
  constructor(readonly variable: string, message: string) {
    super(message);
  }
}

/** Parses the environment. Throws ConfigError with one line naming the variable and the fix. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const input: Record<string, string | undefined> = {};
  for (const k of CONFIG_KEYS) {
    const v = env[k];
    if (v !== undefined && v !== "") input[k] = v;
  }
  const r = schema.safeParse(input);
  if (r.success) {
    const c = r.data;
    if (c.TELEGRAM_MODE === "webhook" && c.TELEGRAM_BOT_TOKEN && !c.TELEGRAM_WEBHOOK_SECRET) {
      throw new ConfigError("TELEGRAM_WEBHOOK_SECRET", "TELEGRAM_WEBHOOK_SECRET is required when TELEGRAM_MODE=webhook: set it to a random string of 1-256 characters (A-Z, a-z, 0-9, _ and -).");
    }
    if (c.SLACK_BOT_TOKEN && !c.SLACK_APP_TOKEN && !c.SLACK_SIGNING_SECRET) {
      throw new ConfigError("SLACK_SIGNING_SECRET", "SLACK_SIGNING_SECRET is required for Slack HTTP mode: copy it from your Slack app's Basic Information page, or set SLACK_APP_TOKEN for Socket Mode.");
    }
    return c;
  }
  const issue = r.error.issues[0]!;
  const variable = String(issue.path[0] ?? "configuration");
  // Never echo the value of a secret variable.
  const message = SECRET_KEYS.includes(variable as keyof Config) ? issue.message.replace(/\(got ".*"\)/, "").trim() : issue.message;
  throw new ConfigError(variable, `${variable} ${message}. Fix it in the environment or .env (see .env.example).`);
}
