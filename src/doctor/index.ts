import { SECRET_KEYS, type Config, type ConfigError } from "../config.js";
import { redactSecrets, registerSecret } from "../log.js";
import type { Output } from "../cli/output.js";
import { usageError } from "../cli/output.js";
import { fail, pass, type CheckResult } from "./check.js";
import { checkDatabase } from "./database.js";
import { checkDiscord } from "./discord.js";
import { checkExposure } from "./exposure.js";
import { checkModel } from "./model.js";
import { checkSlack, checkSlackInstallations } from "./slack.js";
import { checkTelegram } from "./telegram.js";

export type { CheckResult };

const DURATION = /^(\d+(?:\.\d+)?)(ms|s)?$/;

/**
 * The variables naming where a check sends its secret. The lenient read leaves an invalid one
 * at its default, which is the platform's public host: a typo in OPENAI_BASE_URL must not send
 * OPENAI_API_KEY to api.openai.com. So such a check contacts nobody and fails naming it.
 */
const ENDPOINTS = [
  {
    variable: "OPENAI_BASE_URL",
    id: "model",
    title: "Model server",
    secret: "OPENAI_API_KEY",
    example: "https://api.openai.com/v1 or http://localhost:11434/v1",
  },
  { variable: "TELEGRAM_API_ROOT", id: "telegram", title: "Telegram", secret: "TELEGRAM_BOT_TOKEN", example: "http://127.0.0.1:8081 (no trailing slash)" },
  { variable: "DISCORD_API_URL", id: "discord", title: "Discord", secret: "DISCORD_BOT_TOKEN", example: "http://127.0.0.1:PORT/api (no trailing slash)" },
  { variable: "SLACK_API_URL", id: "slack", title: "Slack", secret: "SLACK_BOT_TOKEN", example: "http://127.0.0.1:PORT/api/ (with the trailing slash)" },
] as const;

function unnamedEndpoint(problems: ConfigError[], id: (typeof ENDPOINTS)[number]["id"]): CheckResult[] | undefined {
  const e = ENDPOINTS.find((x) => x.id === id)!;
  if (!problems.some((p) => p.variable === e.variable)) return undefined;
  return [
    fail(
      e.id,
      e.title,
      `${e.variable} is invalid, so no server was contacted: ${e.secret} goes only to the server ${e.variable} names, never to a default in its place.`,
      `Set ${e.variable} to an absolute http(s) URL, e.g. ${e.example}, or unset it for the platform's own host.`,
    ),
  ];
}

/** The installations' checks, contacting nobody when SLACK_API_URL is invalid (said once, by the token check when it runs too). */
function slackInstallations(config: Config, problems: ConfigError[], timeoutMs: number): CheckResult[] | Promise<CheckResult[]> {
  const refused = unnamedEndpoint(problems, "slack");
  if (refused) return config.SLACK_BOT_TOKEN ? [] : refused;
  return checkSlackInstallations(config, timeoutMs);
}

/** Every check, independent ones at once; the list comes back in a fixed order. */
export async function runDoctor(config: Config, env: NodeJS.ProcessEnv, opts: { timeoutMs?: number; problems?: ConfigError[] } = {}): Promise<CheckResult[]> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const platforms = [
    config.CONSOLE_ENABLED && "console",
    config.TELEGRAM_BOT_TOKEN && "telegram",
    config.DISCORD_BOT_TOKEN && "discord",
    (config.SLACK_BOT_TOKEN || config.SLACK_CLIENT_ID) && "slack",
  ].filter(Boolean);
  const problems = opts.problems ?? [];
  const configured = problems.length
    ? fail(
        "config",
        "Configuration",
        problems.map((p) => p.message).join(" "),
        `Fix ${problems.map((p) => p.variable).join(", ")}; the checks below ran with ${problems.length === 1 ? "it" : "them"} at the default.`,
      )
    : pass(
        "config",
        "Configuration",
        `valid; adapters: ${platforms.join(", ") || "none"}; agent: ${config.OPENAI_BASE_URL || config.OPENAI_API_KEY ? `openai (${config.OPENAI_MODEL ?? "no model"})` : "echo"}.`,
      );
  const groups = await Promise.all([
    checkDatabase(config),
    config.TELEGRAM_BOT_TOKEN ? (unnamedEndpoint(problems, "telegram") ?? checkTelegram(config, timeoutMs)) : [],
    config.DISCORD_BOT_TOKEN ? (unnamedEndpoint(problems, "discord") ?? checkDiscord(config, timeoutMs)) : [],
    config.SLACK_BOT_TOKEN ? (unnamedEndpoint(problems, "slack") ?? checkSlack(config, timeoutMs)) : [],
    // Installs by OAuth: each stored installation with its own token (SLACK_BOT_TOKEN, when also set, is one more).
    config.SLACK_CLIENT_ID ? slackInstallations(config, problems, timeoutMs) : [],
    unnamedEndpoint(problems, "model") ?? checkModel(config, timeoutMs, env),
    checkExposure(config, env),
  ]);
  // Remote error text may quote what it refused: mask every secret once more.
  return [configured, ...groups.flat()].map((c) => ({ ...c, detail: redactSecrets(c.detail), ...(c.fix && { fix: redactSecrets(c.fix) }) }));
}

const MARK: Record<CheckResult["status"], string> = { pass: "ok  ", warn: "warn", fail: "FAIL", skip: "skip" };

/** `switchboard doctor [--timeout 10s] [--json]`: exit 0 when nothing failed (warnings allowed), 1 otherwise. */
export async function doctorCommand(
  config: Config,
  env: NodeJS.ProcessEnv,
  o: { timeout?: string },
  out: Output,
  problems: ConfigError[] = [],
): Promise<number> {
  let timeoutMs = 10_000;
  if (o.timeout !== undefined) {
    const m = DURATION.exec(o.timeout.trim());
    if (!m) throw usageError(`--timeout must be a duration such as 500ms or 10s (got "${o.timeout}")`);
    timeoutMs = Math.round(Number(m[1]) * (m[2] === "ms" ? 1 : 1000));
  }
  for (const k of SECRET_KEYS) registerSecret(config[k] as string | undefined);
  registerSecret(env.OPERATOR_TOKEN);
  const checks = await runDoctor(config, env, { timeoutMs, problems });
  const failed = checks.filter((c) => c.status === "fail").length;
  const warned = checks.filter((c) => c.status === "warn").length;
  const human = checks.flatMap((c) => [`[${MARK[c.status]}] ${c.title}: ${c.detail}`, ...(c.fix && c.status !== "pass" ? [`       fix: ${c.fix}`] : [])]);
  human.push(
    "",
    failed
      ? `${failed} check${failed === 1 ? "" : "s"} failed${warned ? `, ${warned} warning${warned === 1 ? "" : "s"}` : ""}.`
      : `All checks passed${warned ? ` (${warned} warning${warned === 1 ? "" : "s"})` : ""}.`,
  );
  return out.report({ checks, failed, warnings: warned }, human, failed === 0);
}
