import type { Interceptor } from "../interceptors.js";
import { helpCommand, whoamiCommand } from "./help.js";
import { addressedElsewhere, parseCommand, type ParsedCommand } from "./parse.js";
import { newCommand, resumeCommand, stopCommand } from "./session.js";
import { sessionsCommand, statusCommand } from "./sessions.js";
import { allowedModel, settingCommands } from "./settings.js";
import type { CommandContext, CommandOptions, CommandSpec } from "./spec.js";

export type { Cancellable, CommandAccess, CommandContext, CommandOptions, CommandSpec } from "./spec.js";
export { allowedModel };

/** The runtime's commands, in the order /help lists them, then the gateway's (`extra`), then /help. */
export function builtinCommands(opts: CommandOptions): CommandSpec[] {
  const commands: CommandSpec[] = [
    newCommand(opts),
    stopCommand,
    statusCommand(opts),
    ...settingCommands(opts),
    sessionsCommand(opts),
    resumeCommand,
    whoamiCommand,
    ...(opts.extra ?? []),
  ];
  return [...commands, helpCommand(commands, opts)];
}

/**
 * The slash-command middleware. It consumes commands (each acts through the
 * context's capabilities and replies with notices) and passes every other
 * message on. A command addressed to another bot (`/cmd@otherbot`) is
 * consumed silently.
 */
export function commandInterceptor(opts: CommandOptions): Interceptor & { commands: CommandSpec[] } {
  const commands = builtinCommands(opts);
  const byName = new Map<string, CommandSpec>();
  for (const c of commands) for (const n of [c.name, ...(c.aliases ?? [])]) byName.set(n, c);
  const admin = new Set(opts.adminCommands ?? []);

  const interceptor: Interceptor = async (event, ctx, next) => {
    const cmd = event.command;
    if (!cmd) return next();
    if (addressedElsewhere(cmd, event.botUsername)) return;
    if (!event.respond && !cmd.target) return next(); // an unaddressed command in a gated group is just context
    const spec = byName.get(cmd.name);
    if (!spec) {
      ctx.notify("warn", `Unknown command /${cmd.name}. Send /help for the list.`);
      return;
    }
    const access = admin.has(spec.name) ? "admin" : (spec.access ?? "anyone");
    if ((access === "admin" && !event.isAdmin) || (access === "operator" && !event.isOperator)) {
      ctx.notify("error", `/${spec.name} is for operators only.`);
      return;
    }
    const command: CommandContext = { event, session: ctx.session, can: ctx.can, args: cmd.args, name: cmd.name, notify: ctx.notify };
    const cancels = typeof spec.cancels === "function" ? spec.cancels(command) : spec.cancels;
    if (cancels) await opts.cancel?.[cancels]?.(ctx.session.id, `/${cmd.name}`);
    await spec.run(command);
  };
  return Object.assign(interceptor, { commands });
}

export { parseCommand, addressedElsewhere, type ParsedCommand };
