import { z } from "zod";
import { SwitchboardError } from "./errors.js";
import { serverSettings } from "./config/server.js";
import { conversationSettings } from "./config/conversations.js";
import { agentSettings } from "./config/agent.js";
import { platformSettings } from "./config/platforms.js";
import { telemetrySettings } from "./config/telemetry.js";

export { SLACK_DEFAULT_SCOPES } from "./config/platforms.js";

/**
 * Configuration comes from the environment only, validated here at the edge.
 * A bad value stops the start with one line naming the variable and the fix.
 * `.env.example` documents every variable; keep the two in step
 * (test/config.test.ts checks that they match).
 */

const schema = z.object({ ...serverSettings, ...conversationSettings, ...agentSettings, ...platformSettings, ...telemetrySettings });

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
  "SLACK_CLIENT_SECRET",
  "SLACK_STATE_SECRET",
  "SLACK_INSTALL_TOKEN",
  "OPERATOR_TOKEN",
  "API_TOKENS",
  "HOOKS_CONFIG",
  "OTEL_EXPORTER_OTLP_HEADERS",
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
  // Parsed once a process: zod's compiled fast path (code generated for the whole object, about
  // 10 ms) would cost more than it saves, so this parse walks the schema instead.
  const r = schema.safeParse(input, { jitless: true });
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
    slackCrossChecks(c);
    return c;
  }
  const issue = r.error.issues[0]!;
  const variable = String(issue.path[0] ?? "configuration");
  // Never echo the value of a secret variable.
  const message = SECRET_KEYS.includes(variable as keyof Config) ? issue.message.replace(/\(got ".*"\)/, "").trim() : issue.message;
  // One line, whatever the value held.
  throw new ConfigError(variable, `${variable} ${message.replace(/[\r\n]+/g, " ")}. Fix it in the environment or .env (see .env.example).`);
}

/** True when the Slack app installs by OAuth (many workspaces): SLACK_CLIENT_ID is set. */
export function slackInstallsByOAuth(c: Pick<Config, "SLACK_CLIENT_ID">): boolean {
  return c.SLACK_CLIENT_ID !== undefined;
}

/** Half-filled Slack settings would start a gateway without Slack and no word why. */
function slackCrossChecks(c: Config): void {
  const oauth = slackInstallsByOAuth(c);
  if (oauth) {
    for (const [name, fix] of [
      ["SLACK_CLIENT_SECRET", "copy the Client Secret from the Slack app's Basic Information page"],
      ["SLACK_STATE_SECRET", "make one with `openssl rand -hex 32`; every process of the gateway needs the same value"],
      ["PUBLIC_URL", "set it to the address Slack redirects installers to (the Redirect URL is PUBLIC_URL/slack/oauth_redirect)"],
    ] as const) {
      if (!c[name]) throw new ConfigError(name, `${name} is required with SLACK_CLIENT_ID (installs by OAuth): ${fix}.`);
    }
  } else if (c.SLACK_CLIENT_SECRET || c.SLACK_STATE_SECRET || c.SLACK_INSTALL_TOKEN) {
    throw new ConfigError(
      "SLACK_CLIENT_ID",
      "SLACK_CLIENT_ID is required with SLACK_CLIENT_SECRET, SLACK_STATE_SECRET or SLACK_INSTALL_TOKEN: copy the Client ID from the Slack app's Basic Information page, or unset them to run with one SLACK_BOT_TOKEN.",
    );
  }
  if (!c.SLACK_BOT_TOKEN && !oauth && (c.SLACK_SIGNING_SECRET || c.SLACK_APP_TOKEN)) {
    const given = c.SLACK_APP_TOKEN ? "SLACK_APP_TOKEN" : "SLACK_SIGNING_SECRET";
    throw new ConfigError(
      "SLACK_BOT_TOKEN",
      `SLACK_BOT_TOKEN is required with ${given}: copy the Bot User OAuth Token (xoxb-...) from your Slack app's OAuth & Permissions page, or unset ${given} to run without Slack.`,
    );
  }
  if ((c.SLACK_BOT_TOKEN || oauth) && !c.SLACK_APP_TOKEN && !c.SLACK_SIGNING_SECRET) {
    throw new ConfigError(
      "SLACK_SIGNING_SECRET",
      "SLACK_SIGNING_SECRET is required for Slack HTTP mode: copy it from your Slack app's Basic Information page, or set SLACK_APP_TOKEN for Socket Mode.",
    );
  }
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
