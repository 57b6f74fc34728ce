/**
 * Registers the gateway's chat commands with setMyCommands, at most once per
 * change of the list. Calling it on every start is what got bots rate-limited
 * when many restarted together (openclaw #32017), so the hash of the list last
 * registered is kept in ctx.kv and an unchanged list is not sent again.
 * A failure is logged and never stops the adapter: commands are a menu, not
 * a way to reach the bot (typed commands still work).
 */
import { createHash } from "node:crypto";
import type { Api } from "grammy";
import type { Logger } from "../../src/log.js";
import type { AdapterContext } from "../types.js";
import { describeError } from "./errors.js";

export interface BotCommandSpec {
  command: string;
  description: string;
}

const NAME = /^[a-z0-9_]{1,32}$/;

/** The list as Telegram accepts it: names of 1-32 [a-z0-9_], descriptions of 1-256 characters, at most 100. */
export function telegramCommandList(commands: AdapterContext["commands"], log?: Logger): BotCommandSpec[] {
  const out: BotCommandSpec[] = [];
  const seen = new Set<string>();
  for (const c of commands) {
    const command = c.name.replace(/^\//, "").toLowerCase();
    if (!NAME.test(command)) {
      log?.warn({ command }, "telegram: command name is not 1-32 characters of a-z, 0-9 and _; left out of the command menu");
      continue;
    }
    if (seen.has(command)) continue;
    seen.add(command);
    const description = (c.description.trim() || command).slice(0, 256);
    out.push({ command, description });
  }
  return out.slice(0, 100);
}

export function commandsKey(botId: string): string {
  return `telegram:${botId}:commands`;
}

export function commandsHash(list: BotCommandSpec[]): string {
  return createHash("sha256").update(JSON.stringify(list)).digest("hex");
}

/** Returns what happened, for logs and tests. */
export async function syncCommands(
  api: Api,
  ctx: Pick<AdapterContext, "kv" | "commands">,
  botId: string,
  log: Logger,
): Promise<"registered" | "unchanged" | "failed"> {
  const list = telegramCommandList(ctx.commands, log);
  const key = commandsKey(botId);
  const hash = commandsHash(list);
  let previous: string | undefined;
  try {
    previous = await ctx.kv.get(key);
  } catch (err) {
    // Without the stored hash, registering again is the safe side.
    log.warn({ error: err instanceof Error ? err.name : typeof err }, "telegram: could not read the registered command hash; registering commands");
  }
  if (previous === hash) return "unchanged";
  try {
    await api.setMyCommands(list);
  } catch (err) {
    log.warn(
      { err: describeError(err, "setMyCommands") },
      "telegram: setMyCommands failed; the command menu is not updated, commands still work when typed. It is retried at the next start",
    );
    return "failed";
  }
  try {
    await ctx.kv.set(key, hash);
  } catch (err) {
    log.warn(
      { error: err instanceof Error ? err.name : typeof err },
      "telegram: could not store the registered command hash; commands will be registered again at the next start",
    );
  }
  log.info({ count: list.length }, "telegram: command menu registered");
  return "registered";
}
