import { z } from "zod";
import { HooksConfigError, parseHooksConfig } from "./gateway/http/api/hooks-config.js";
import { ApiTokensError, parseApiTokens } from "./gateway/http/api/tokens.js";
import { SwitchboardError } from "./errors.js";
import { isTimeZone } from "./runtime/jobs/zone.js";

/**
 * Configuration comes from the environment only, validated here at the edge.
 * A bad value stops the start with one line naming the variable and the fix.
 * `.env.example` documents every variable; keep the two in step
 * (test/config.test.ts checks that they match).
 */

const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

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
    .transform((v) =>
      v
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean),
    );

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

/** An optional value that, when set, must match `re`; `fix` says what a good one looks like. */
const matching = (re: RegExp, fix: string) =>
  optionalString().superRefine((v, ctx) => {
    if (v !== undefined && !re.test(v)) ctx.addIssue({ code: "custom", message: fix });
  });

/** An optional whole number (kept as text: the adapters read it so). */
const wholeNumber = (fix: string) => matching(/^\d{1,6}$/, fix);

const schema = z.object({
  DATABASE_URL: z
    .string()
    .default("file:./data/switchboard.db")
    .refine((v) => v.startsWith("file:") || /^postgres(ql)?:\/\//.test(v), "must start with file: (SQLite) or postgresql:// (PostgreSQL)"),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  LOG_FORMAT: optionalString().refine(
    (v) => v === undefined || v === "json" || v === "pretty",
    "must be json or pretty (or empty: pretty on a terminal, JSON otherwise)",
  ) as z.ZodType<"json" | "pretty" | undefined, string | undefined>,
  HTTP_HOST: z.string().default("127.0.0.1"),
  HTTP_PORT: int(8787, 0, 65535),
  CONSOLE_ENABLED: bool(true),
  OPERATOR_TOKEN: optionalString().superRefine((v, ctx) => {
    if (v !== undefined && (v.length < 16 || /\s/.test(v)))
      ctx.addIssue({ code: "custom", message: "must be at least 16 characters with no spaces; make one with: openssl rand -hex 32" });
  }),
  API_TOKENS: optionalString().superRefine((v, ctx) => {
    try {
      parseApiTokens(v);
    } catch (e) {
      if (!(e instanceof ApiTokensError)) throw e;
      ctx.addIssue({ code: "custom", message: e.message });
    }
  }),
  HOOKS_CONFIG: optionalString().superRefine((v, ctx) => {
    try {
      parseHooksConfig(v);
    } catch (e) {
      if (!(e instanceof HooksConfigError)) throw e;
      ctx.addIssue({ code: "custom", message: e.message });
    }
  }),
  OPERATOR_HOST: optionalString(),
  OPERATOR_PORT: optionalString().superRefine((v, ctx) => {
    if (v !== undefined && !(/^\d{1,5}$/.test(v) && Number(v) <= 65535))
      ctx.addIssue({ code: "custom", message: `must be a port number from 0 to 65535 (got "${v}")` });
  }),
  PUBLIC_URL: url("the address operators and platforms use to reach this gateway, e.g. https://bot.example.com"),
  HTTP_MAX_CONNECTIONS: int(2048, 16, 1_000_000),
  HTTP_MAX_BUFFERED_MB: int(16, 1, 16_384),
  HTTP_HEADERS_TIMEOUT: duration("10s"),
  HTTP_REQUEST_TIMEOUT: duration("30s"),
  RECORD_RETENTION: duration("7d"),
  SHUTDOWN_GRACE: duration("25s"),

  INBOUND_TTL: duration("10m"),
  DM_POLICY: z.enum(["pairing", "allowlist", "open"]).default("pairing"),
  ALLOW_FROM: list(),
  ADMIN_USERS: list(),
  ADMIN_COMMANDS: z
    .string()
    .default("approve")
    .transform((v) =>
      v
        .split(",")
        .map((s) => s.trim().replace(/^\//, "").toLowerCase())
        .filter(Boolean),
    ),
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
  TOOL_TIMEOUT: duration("30s"),
  MCP_CONFIG: optionalString(),
  APPROVERS: z.enum(["requester", "admins", "anyone"]).default("requester"),
  APPROVAL_TIMEOUT: duration("10m"),
  PERSONAS: optionalString(),
  CONTEXT_MAX_MESSAGES: int(40, 1, 10_000),
  LIVE_SESSIONS_MAX: int(2000, 10, 10_000_000),
  CONTEXT_MAX_CHARS: int(24_000, 100, 10_000_000),
  REFLECT_EVERY_TURNS: int(20, 0, 100_000),
  REFLECT_SWEEP_INTERVAL: duration("15m"),
  DEFAULT_TIMEZONE: z
    .string()
    .default("UTC")
    .refine((v) => isTimeZone(v), "must be an IANA time zone name such as UTC, Europe/Paris or America/New_York"),
  SCHEDULE_MISFIRE_GRACE: duration("10m"),
  // Media, speakers and cost controls (src/runtime/media/, src/runtime/speaker.ts, src/runtime/turn-limit.ts).
  MODEL_VISION: bool(false),
  IMAGE_MAX_BYTES: int(5 * 1024 * 1024, 1024, 100 * 1024 * 1024),
  AUDIO_MAX_BYTES: int(25 * 1024 * 1024, 1024, 100 * 1024 * 1024),
  MEDIA_TIMEOUT: duration("30s"),
  TRANSCRIBE_MODEL: matching(/^[A-Za-z0-9._:/@+-]{1,200}$/, "must be a model name such as whisper-1 (letters, digits and . _ : / @ + -, no spaces)"),
  TRANSCRIBE_BASE_URL: url("the OpenAI-compatible API that serves /audio/transcriptions (default: OPENAI_BASE_URL)"),
  MODEL_SPEAKER_NAMES: z.enum(["name", "prefix"]).default("name"),
  MODELS_ALLOWED: list().superRefine((names, ctx) => {
    const bad = names.find((n) => !/^[A-Za-z0-9._:/@+-]{1,200}$/.test(n));
    if (bad !== undefined)
      ctx.addIssue({ code: "custom", message: `must be a comma-separated list of model names such as gpt-4o-mini,llama3.1:8b (got "${bad}")` });
  }),
  USER_TURNS_PER_MINUTE: int(0, 0, 100_000),

  TELEGRAM_BOT_TOKEN: matching(
    /^\d+:[A-Za-z0-9_-]+$/,
    "must be the token @BotFather gave you: the bot id, a colon, then letters, digits, _ and - (e.g. 123456789:AAE...)",
  ),
  TELEGRAM_API_ROOT: url("the Telegram Bot API root", { trailingSlash: "forbid" }),
  TELEGRAM_MODE: z.enum(["polling", "webhook"]).default("polling"),
  TELEGRAM_WEBHOOK_SECRET: matching(/^[A-Za-z0-9_-]{1,256}$/, "must be 1-256 characters of A-Z, a-z, 0-9, _ and - (what Telegram allows in secret_token)"),
  TELEGRAM_WEBHOOK_URL: url("the public webhook URL Telegram will call"),

  DISCORD_BOT_TOKEN: matching(
    /^[A-Za-z0-9_.-]+$/,
    "must be the bot token from the Discord Developer Portal (Bot tab): letters, digits, '.', '_' and '-', no spaces",
  ),
  DISCORD_API_URL: url("the Discord REST API, e.g. http://127.0.0.1:PORT/api", { trailingSlash: "forbid" }),
  DISCORD_ALLOW_BOTS: bool(false),
  DISCORD_MENTION_ROLES: list().superRefine((ids, ctx) => {
    const bad = ids.find((id) => !/^\d{1,20}$/.test(id));
    if (bad !== undefined) ctx.addIssue({ code: "custom", message: `must be a comma-separated list of Discord role ids (numbers; got "${bad}")` });
  }),
  DISCORD_SHARD_ID: wholeNumber("must be a whole number from 0 to DISCORD_SHARD_COUNT-1"),
  DISCORD_SHARD_COUNT: wholeNumber("must be a whole number of shards, 1 or more"),

  SLACK_BOT_TOKEN: matching(/^xoxb-[A-Za-z0-9-]+$/, "must be the app's Bot User OAuth Token (xoxb-..., from OAuth & Permissions)"),
  SLACK_SIGNING_SECRET: matching(/^[A-Za-z0-9_-]+$/, "must be the Signing Secret from the Slack app's Basic Information page (letters and digits, no spaces)"),
  SLACK_APP_TOKEN: matching(/^xapp-[A-Za-z0-9-]+$/, "must be an app-level token with connections:write (xapp-..., from Basic Information > App-Level Tokens)"),
  SLACK_API_URL: url("the Slack Web API base, e.g. http://127.0.0.1:PORT/api/", { trailingSlash: "require" }),
});

export type Config = z.infer<typeof schema>;
export const CONFIG_KEYS = Object.keys(schema.shape) as Array<keyof Config>;

/** Secret-bearing variables: never logged, never echoed in errors. */
export const SECRET_KEYS: ReadonlyArray<keyof Config> = [
  "OPENAI_API_KEY",
  "TELEGRAM_BOT_TOKEN",
  "TELEGRAM_WEBHOOK_SECRET",
  "DISCORD_BOT_TOKEN",
  "SLACK_BOT_TOKEN",
  "SLACK_SIGNING_SECRET",
  "SLACK_APP_TOKEN",
  "OPERATOR_TOKEN",
  "API_TOKENS",
  "HOOKS_CONFIG",
];

/** True for a bind address only this machine can reach. */
export function isLoopbackBind(host: string): boolean {
  const h = host
    .trim()
    .replace(/^\[|\]$/g, "")
    .toLowerCase();
  return h === "localhost" || h === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

export class ConfigError extends SwitchboardError<"Invalid"> {
  override readonly name = "ConfigError";
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super("Invalid", message);
  }
}

/** Parses the environment. Throws ConfigError with one line naming the variable and the fix. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, opts: { crossChecks?: boolean } = {}): Config {
  const input: Record<string, string | undefined> = {};
  for (const k of CONFIG_KEYS) {
    const v = env[k];
    if (v !== undefined && v !== "") input[k] = v;
  }
  const r = schema.safeParse(input);
  if (r.success) {
    const c = r.data;
    if (opts.crossChecks === false) return c;
    if (c.TELEGRAM_MODE === "webhook" && c.TELEGRAM_BOT_TOKEN && !c.TELEGRAM_WEBHOOK_SECRET) {
      throw new ConfigError(
        "TELEGRAM_WEBHOOK_SECRET",
        "TELEGRAM_WEBHOOK_SECRET is required when TELEGRAM_MODE=webhook: set it to a random string of 1-256 characters (A-Z, a-z, 0-9, _ and -).",
      );
    }
    // Where the console, API and metrics listen: the operator listener when there is one (loopback unless OPERATOR_HOST says otherwise).
    const operatorBind = c.OPERATOR_PORT !== undefined ? (c.OPERATOR_HOST ?? "127.0.0.1") : c.HTTP_HOST;
    if (!c.OPERATOR_TOKEN && !isLoopbackBind(operatorBind)) {
      throw new ConfigError(
        "OPERATOR_TOKEN",
        `OPERATOR_TOKEN is required when the console, API and metrics listen on ${operatorBind} (not loopback): make one with \`openssl rand -hex 32\` and set OPERATOR_TOKEN, or set OPERATOR_HOST=127.0.0.1 to keep them local.`,
      );
    }
    if (c.OPERATOR_HOST !== undefined && c.OPERATOR_PORT === undefined) {
      throw new ConfigError("OPERATOR_PORT", "OPERATOR_PORT is required with OPERATOR_HOST: the operator listener needs a port of its own (e.g. 8788).");
    }
    if (c.HTTP_HEADERS_TIMEOUT > c.HTTP_REQUEST_TIMEOUT) {
      throw new ConfigError(
        "HTTP_HEADERS_TIMEOUT",
        "HTTP_HEADERS_TIMEOUT must not be longer than HTTP_REQUEST_TIMEOUT (the whole request includes its headers).",
      );
    }
    if ((c.DISCORD_SHARD_ID === undefined) !== (c.DISCORD_SHARD_COUNT === undefined)) {
      const missing = c.DISCORD_SHARD_ID === undefined ? "DISCORD_SHARD_ID" : "DISCORD_SHARD_COUNT";
      throw new ConfigError(
        missing,
        `${missing} must be set too: set both DISCORD_SHARD_ID and DISCORD_SHARD_COUNT as whole numbers (e.g. 0 and 2), or neither. Fix it in the environment or .env (see .env.example).`,
      );
    }
    if (
      c.DISCORD_SHARD_ID !== undefined &&
      c.DISCORD_SHARD_COUNT !== undefined &&
      (Number(c.DISCORD_SHARD_COUNT) < 1 || Number(c.DISCORD_SHARD_ID) >= Number(c.DISCORD_SHARD_COUNT))
    ) {
      throw new ConfigError(
        "DISCORD_SHARD_ID",
        `DISCORD_SHARD_ID must be from 0 to DISCORD_SHARD_COUNT-1 (got ${c.DISCORD_SHARD_ID} of ${c.DISCORD_SHARD_COUNT}). Fix it in the environment or .env (see .env.example).`,
      );
    }
    if (c.TRANSCRIBE_MODEL && !c.TRANSCRIBE_BASE_URL && !c.OPENAI_BASE_URL && !c.OPENAI_API_KEY) {
      throw new ConfigError(
        "TRANSCRIBE_BASE_URL",
        "TRANSCRIBE_MODEL needs a server: set TRANSCRIBE_BASE_URL (or OPENAI_BASE_URL) to an OpenAI-compatible API that serves /audio/transcriptions, e.g. https://api.openai.com/v1.",
      );
    }
    if (c.SLACK_BOT_TOKEN && !c.SLACK_APP_TOKEN && !c.SLACK_SIGNING_SECRET) {
      throw new ConfigError(
        "SLACK_SIGNING_SECRET",
        "SLACK_SIGNING_SECRET is required for Slack HTTP mode: copy it from your Slack app's Basic Information page, or set SLACK_APP_TOKEN for Socket Mode.",
      );
    }
    return c;
  }
  const issue = r.error.issues[0]!;
  const variable = String(issue.path[0] ?? "configuration");
  // Never echo the value of a secret variable.
  const message = SECRET_KEYS.includes(variable as keyof Config) ? issue.message.replace(/\(got ".*"\)/, "").trim() : issue.message;
  // One line, whatever the value held.
  throw new ConfigError(variable, `${variable} ${message.replace(/[\r\n]+/g, " ")}. Fix it in the environment or .env (see .env.example).`);
}

/**
 * For `switchboard doctor`, which must diagnose a configuration the gateway
 * would refuse: every invalid variable is reported and left at its default,
 * and the checks between variables are reported without stopping.
 */
export function loadConfigLenient(env: NodeJS.ProcessEnv = process.env): { config: Config; problems: ConfigError[] } {
  const e: NodeJS.ProcessEnv = { ...env };
  const problems: ConfigError[] = [];
  for (let crossChecks = true; ; ) {
    try {
      return { config: loadConfig(e, { crossChecks }), problems };
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems.push(err);
      // A variable that is set but invalid falls back to its default; a rule between variables is reported once.
      if (e[err.variable] !== undefined && e[err.variable] !== "") delete e[err.variable];
      else crossChecks = false;
      if (problems.length > CONFIG_KEYS.length + 1) throw err;
    }
  }
}
