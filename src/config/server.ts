import { z } from "zod";
import { ApiTokensError, parseApiTokens } from "./api-tokens.js";
import { HooksConfigError, parseHooksConfig } from "./hooks.js";
import { addressBlocks } from "./address-blocks.js";
import { duration, bool, int, optionalString, parsedBy, url } from "./values.js";

/** The store, logging and the HTTP edge (listeners, operator access, the API, hooks, limits, retention), start and shutdown. */
export const serverSettings = {
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
  API_TOKENS: parsedBy(parseApiTokens, ApiTokensError),
  HOOKS_CONFIG: parsedBy(parseHooksConfig, HooksConfigError),
  OPERATOR_HOST: optionalString(),
  OPERATOR_PORT: optionalString().superRefine((v, ctx) => {
    if (v !== undefined && !(/^\d{1,5}$/.test(v) && Number(v) <= 65535))
      ctx.addIssue({ code: "custom", message: `must be a port number from 0 to 65535 (got "${v}")` });
  }),
  PUBLIC_URL: url("the address operators and platforms use to reach this gateway, e.g. https://bot.example.com"),
  TRUST_LOOPBACK: bool(false),
  HTTP_MAX_CONNECTIONS: int(2048, 16, 1_000_000),
  HTTP_MAX_CONNECTIONS_PER_ADDRESS: int(256, 0, 1_000_000),
  HTTP_MAX_CONNECTIONS_PER_ADDRESS_EXEMPT: addressBlocks("loopback"),
  HTTP_MAX_BUFFERED_MB: int(16, 1, 16_384),
  HTTP_HEADERS_TIMEOUT: duration("10s"),
  HTTP_REQUEST_TIMEOUT: duration("30s"),
  // A redelivery finds its record only while it is kept: a hook's signature is good 5 minutes either side of its t, and platforms retry for minutes.
  RECORD_RETENTION: duration("7d").refine(
    (ms) => ms >= 3_600_000,
    "must be at least 1h: a redelivered hook or platform event must still find its record, else it runs again",
  ),
  SHUTDOWN_GRACE: duration("25s"),
  MCP_START_TIMEOUT: duration("10s"),
};
