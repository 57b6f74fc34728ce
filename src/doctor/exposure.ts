import type { Config } from "../config.js";
import { fail, pass, type CheckResult } from "./check.js";

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|localhost|::1|\[::1\]|::ffff:127\.\d+\.\d+\.\d+)$/i;

export const isLoopback = (host: string): boolean => LOOPBACK.test(host.trim());

/**
 * The console and its API act as a trusted operator: on any address but
 * loopback they need OPERATOR_TOKEN, or anyone who reaches the port can
 * read every conversation and talk as the operator.
 */
export function checkExposure(config: Config, env: NodeJS.ProcessEnv): CheckResult[] {
  const host = config.HTTP_HOST;
  const token = (config as Record<string, unknown>).OPERATOR_TOKEN ?? env.OPERATOR_TOKEN;
  const hasToken = typeof token === "string" && token.trim().length > 0;
  if (isLoopback(host))
    return [pass("exposure", "Exposure", `HTTP_HOST=${host}: only this machine reaches the console${hasToken ? "; OPERATOR_TOKEN is set too" : ""}.`)];
  if (!config.CONSOLE_ENABLED) return [pass("exposure", "Exposure", `HTTP_HOST=${host}, and the console is off (CONSOLE_ENABLED=false).`)];
  if (hasToken) return [pass("exposure", "Exposure", `HTTP_HOST=${host} is reachable from the network; the console requires OPERATOR_TOKEN.`)];
  return [
    fail(
      "exposure",
      "Exposure",
      `HTTP_HOST=${host} serves the console and its API to the network without OPERATOR_TOKEN: anyone who reaches port ${config.HTTP_PORT} can read every conversation and chat as the operator.`,
      "Set OPERATOR_TOKEN to a long random value (e.g. `openssl rand -hex 32`), or bind HTTP_HOST=127.0.0.1 behind a reverse proxy that forwards only the webhook paths.",
    ),
  ];
}
