import type { Config } from "../../config.js";
import type { AgentCatalog } from "../../agent/catalog.js";
import type { PersonaRegistry } from "../../agent/personas.js";
import type { ToolRegistry } from "../../agent/tools.js";
import { commandInterceptor, type CommandSpec } from "../../runtime/commands/index.js";
import type { Runner } from "../../runtime/runner.js";
import type { Info } from "../../session/info.js";
import { turnLimit } from "../../runtime/turn-limit.js";
import type { TranscriptStore } from "../../store/index.js";
import { agentCommand } from "../agent-command.js";
import { admitGroupCommand } from "../inbound/group-admission.js";
import type { Pairing } from "../inbound/pairing.js";
import { jobCommands } from "../jobs/commands.js";
import type { JobService } from "../jobs/service.js";
import { approvalIdInterceptor, toolCommands } from "../tool-commands.js";
import type { Tooling } from "../tooling.js";

/**
 * /approve <code>: an admin approves a DM pairing code. An operator (ADMIN_USERS) approves any; a place's
 * own administrator (Slack: a workspace's installer) only codes asked of this bot, so the installer of one
 * workspace cannot admit anyone in another (a code of another bot reads as unknown).
 */
function approveCommand(pairing: Pairing): CommandSpec {
  return {
    name: "approve",
    summary: "approve a DM pairing code (operators)",
    usage: "/approve <code>",
    access: "admin",
    async run(ctx) {
      const { event } = ctx;
      const r = await pairing.approve(ctx.args, event.isOperator ? undefined : { platform: event.origin.platform, botId: event.replyTo.botId });
      ctx.notify(
        typeof r === "string" ? "error" : "success",
        typeof r === "string" ? `Code ${ctx.args || "(none)"} is ${r === "missing" ? "unknown" : r}.` : `Approved ${r.senderId} on ${r.platform}.`,
      );
    },
  };
}

export type ChatCommands = ReturnType<typeof commandInterceptor>;

/** The chat commands: the runtime's own, /approve, /allowgroup, the tool and approval commands, and the scheduler's. */
export function chatCommands(
  config: Config,
  deps: {
    transcript: TranscriptStore;
    personas: PersonaRegistry;
    pairing: Pairing;
    tooling: Tooling;
    jobs: JobService;
    /** The tools a turn in a session is offered (agentWithTools), which /tools lists. */
    offered: (session: Info) => ToolRegistry;
    /** The agents (/agent shows and switches them; /status names the session's model from its agent). */
    agents: AgentCatalog;
    /** /usage and /budget (issue 29). */
    usage?: CommandSpec[];
  },
): ChatCommands {
  return commandInterceptor({
    transcript: deps.transcript,
    personas: deps.personas,
    defaultModel: (info) => deps.agents.of(info.agentId).spec.model,
    // With several agents, /status also names the session's.
    ...(deps.agents.list().length > 1 && { agentOf: (info: Info) => deps.agents.of(info.agentId).name }),
    extra: [
      agentCommand(deps.agents),
      approveCommand(deps.pairing),
      admitGroupCommand(config, deps.pairing.store),
      ...toolCommands(deps.tooling, deps.offered, (info) => deps.agents.of(info.agentId).tools),
      ...jobCommands(deps.jobs),
      ...(deps.usage ?? []),
    ],
    adminCommands: config.ADMIN_COMMANDS,
    modelsAllowed: config.MODELS_ALLOWED,
    cancel: { approvals: (sessionId, reason) => deps.tooling.approvals.cancelSession(sessionId, reason) },
  });
}

/** The runner's interceptors, in order: approval ids first, then the commands, then the turn limit. */
export function registerInterceptors(runner: Runner, tooling: Tooling, commands: ChatCommands, config: Pick<Config, "USER_TURNS_PER_MINUTE">): void {
  runner.register(approvalIdInterceptor(tooling.approvals));
  runner.register(commands);
  if (config.USER_TURNS_PER_MINUTE > 0) runner.register(turnLimit({ perMinute: config.USER_TURNS_PER_MINUTE }));
}

/** What the platforms' command menus list (the commands anyone may use) and every name a command answers to. */
export function commandMenu(commands: ChatCommands, config: Pick<Config, "ADMIN_COMMANDS">) {
  return {
    commands: commands.commands
      .filter((c) => (c.access ?? "anyone") === "anyone" && !config.ADMIN_COMMANDS.includes(c.name))
      .map((c) => ({ name: c.name, description: c.summary })),
    commandNames: commands.commands.flatMap((c) => [c.name, ...(c.aliases ?? [])]),
  };
}
