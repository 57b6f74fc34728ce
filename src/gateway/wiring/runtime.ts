import { Runner } from "../../runtime/runner.js";
import type { FileSource } from "../../runtime/media/types.js";
import { Arrivals } from "../inbound/arrivals.js";
import { Pairing } from "../inbound/pairing.js";
import type { JobService } from "../jobs/service.js";
import { mediaInput } from "../media.js";
import type { AgentPart } from "./agent.js";
import { chatCommands, registerInterceptors, type ChatCommands } from "./commands.js";
import type { AppBase, StorePart } from "./parts.js";
import type { ToolingPart } from "./tooling.js";
import { usageCommands } from "../usage/commands.js";
import type { UsagePart } from "./usage.js";

/** The runtime part: the Runner with its interceptors (approvals, chat commands, the turn limit), and DM pairing. */
export interface RuntimePart {
  runner: Runner;
  pairing: Pairing;
  commands: ChatCommands;
  arrivals: Arrivals;
}

export function runtimePart(base: AppBase, stores: StorePart, agent: AgentPart, tools: ToolingPart, jobs: JobService, usage?: UsagePart): RuntimePart {
  const { config, log, metrics, adapters } = base;
  const { registry, transcript, memories, ledger } = stores;
  // The gateway's in-flight events (built here, handed to it): a failing commit reads when its event happened.
  const arrivals = new Arrivals(log);
  const runner = new Runner({
    registry,
    transcript,
    memories,
    ledger,
    log,
    agentFactory: tools.withTools,
    personas: agent.personas,
    personaOf: agent.agents.personaOf,
    busyPolicy: config.BUSY_POLICY,
    context: { maxMessages: config.CONTEXT_MAX_MESSAGES, maxChars: config.CONTEXT_MAX_CHARS },
    // An agent's own limits (AGENTS_CONFIG contextMaxMessages / contextMaxChars), each falling back to the gateway's.
    contextOf: (info) => {
      const { contextMaxMessages, contextMaxChars } = agent.agents.of(info.agentId).spec;
      if (contextMaxMessages === undefined && contextMaxChars === undefined) return undefined;
      return { maxMessages: contextMaxMessages ?? config.CONTEXT_MAX_MESSAGES, maxChars: contextMaxChars ?? config.CONTEXT_MAX_CHARS };
    },
    turnTimeoutMs: config.AGENT_TIMEOUT,
    maxLiveSessions: config.LIVE_SESSIONS_MAX,
    freshWindow: config.SHARED_DATABASE,
    onTurnCommitted: agent.reflector.onTurnCommitted,
    onRotated: agent.reflector.onRotated,
    // A failing commit is retried until its event's TTL (durable-commit.ts); without a known event, not at all.
    commitDeadline: (ids) => {
      const t = ids.map((id) => arrivals.occurredAt(id)).find((v) => v !== undefined);
      return t === undefined ? undefined : t + config.INBOUND_TTL;
    },
    onCommitError: () => metrics.internalErrors.inc({ where: "turn-commit" }),
    prepareInput: mediaInput(
      config,
      log,
      metrics,
      (platform, botId): FileSource | undefined => adapters.get(platform, botId)?.files,
      agent.agents,
      usage?.meterForEvent,
    ),
  });
  const pairing = new Pairing(stores.access);
  const commands = chatCommands(config, {
    transcript,
    personas: agent.personas,
    pairing,
    tooling: tools.tooling,
    jobs,
    offered: tools.withTools.offered,
    agents: agent.agents,
    ...(usage && {
      usage: usageCommands({ usage: usage.usage, budgets: usage.budgets, configured: usage.agents.budgets, timezone: config.DEFAULT_TIMEZONE }),
    }),
  });
  registerInterceptors(runner, tools.tooling, commands, config);
  return { runner, pairing, commands, arrivals };
}
