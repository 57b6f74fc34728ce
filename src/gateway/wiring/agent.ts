import type { Config } from "../../config.js";
import { registerSecret, type Logger } from "../../log.js";
import { agentCatalog, type AgentCatalog, type AnyAgentFactory } from "../../agent/catalog.js";
import type { AgentFactory, TurnOverrides } from "../../agent/factory.js";
import { DEFAULT_AGENT, defaultAgentSettingsOf, loadAgentsConfig, type AgentsConfig } from "../../config/agents.js";
import { builtinTools, toolRegistry, type Tool, type ToolRegistry } from "../../agent/tools.js";
import type { ModelMeter } from "../../agent/model-meter.js";
import type { Agent } from "../../agent/types.js";
import { personas, type PersonaRegistry } from "../../agent/personas.js";
import { agentCondenser, extractiveCondenser, Reflector, type Condenser } from "../../runtime/reflection.js";
import type { AgentContext } from "../../runtime/runner.js";
import type { Info } from "../../session/info.js";
import type { Registry } from "../../session/registry.js";
import type { TranscriptStore } from "../../store/index.js";
import { scheduleMessageTool } from "../jobs/commands.js";
import type { JobService } from "../jobs/service.js";
import type { Tooling } from "../tooling.js";
import type { AppBase, StorePart } from "./parts.js";
import type { CallPlace, PlacedContext, UsagePart } from "./usage.js";

/** What makes a turn's agent: the configured factory, or a plain function in its place (tests). */
export type TurnAgentFactory = AgentFactory | ((metadata: Record<string, unknown>, ctx: AgentContext & TurnOverrides) => Agent);

/**
 * AGENTS_CONFIG read and checked (keys resolved from `env`), or the one agent
 * `default` without it. Throws AgentsConfigError with one line naming the
 * agent and the field; every resolved key is registered with the log's
 * redactor, so none is ever printed.
 */
export function configuredAgents(config: Config, env: NodeJS.ProcessEnv = process.env): AgentsConfig {
  const agents = loadAgentsConfig(config.AGENTS_CONFIG, env, defaultAgentSettingsOf(config));
  for (const spec of agents.agents.values()) registerSecret(spec.resolvedApiKey);
  return agents;
}

/** The agents' factories from the configuration (each the echo agent when it names no endpoint); `defaultFactory` replaces `default`'s. */
export function configuredCatalog(
  config: Config,
  agents: AgentsConfig,
  personaRegistry: PersonaRegistry,
  log: Logger,
  defaultFactory?: TurnAgentFactory,
): AgentCatalog {
  return agentCatalog(
    agents,
    {
      maxToolRounds: config.TOOL_MAX_ROUNDS,
      toolTimeoutMs: config.TOOL_TIMEOUT,
      speakerNames: config.MODEL_SPEAKER_NAMES,
      modelsAllowed: config.MODELS_ALLOWED,
      log,
    },
    personaRegistry,
    defaultFactory as AnyAgentFactory | undefined,
  );
}

/**
 * Reflection condenses with the session's agent when it has a model (its calls metered for the session at
 * its chat, `placeOf`'s: that chat's budgets apply as to a turn there), and without one (extractively) otherwise.
 */
export function reflectionCondenser(
  agents: AgentCatalog,
  meterFor?: (session: Info, place?: CallPlace) => ModelMeter,
  placeOf?: (session: Info) => Promise<CallPlace | undefined>,
): Condenser {
  const extractive = extractiveCondenser();
  const withModel = (place: CallPlace | undefined) =>
    agentCondenser((session) => {
      const meter = session && meterFor?.(session, place);
      return agents.of(session?.agentId ?? DEFAULT_AGENT).factory({}, meter ? { meter } : {});
    });
  return {
    condense: async (messages, session) => {
      if (agents.of(session?.agentId ?? DEFAULT_AGENT).factory.provider !== "openai") return extractive.condense(messages, session);
      const place = session && (await placeOf?.(session));
      return withModel(place).condense(messages, session);
    },
  };
}

/** A turn's agent maker (`ctx.place`: where a job's turn is made), and what it offers the model in a session (what `/tools` lists: one source for both). */
export type AgentWithTools = ((metadata: Record<string, unknown>, ctx: PlacedContext) => Agent) & {
  /** The tools a turn in `session` is offered: the built-ins scoped to it, schedule_message, the MCP servers' ready tools. */
  offered(session: Info): ToolRegistry;
};

/**
 * The built-in tools of a turn in a session: search_sessions scoped to the
 * asking conversation's own sessions (the user's chat and main sessions,
 * archived ones included), current_time, and the scheduler's
 * schedule_message for this conversation. The tooling's built-in source.
 */
export function sessionBuiltins(deps: { registry: Registry; transcript: TranscriptStore; jobs: JobService }): (session: Info) => Tool[] {
  const { registry, transcript, jobs } = deps;
  return (session) => {
    const owner = { userId: session.userId, agentId: session.agentId };
    const builtins = builtinTools({
      searchSessions: async (query) => {
        const mine = await registry.list(owner, { kinds: ["chat", "main"], includeArchived: true, limit: 100 });
        const hits = await transcript.search(
          mine.map((s) => s.id),
          query.split(/\s+/).filter(Boolean).slice(0, 8),
          10,
        );
        return hits.length ? hits.map((h) => `${h.sessionId}: ${h.snippet}`).join("\n") : "No earlier session mentions that.";
      },
    }).list();
    return [...builtins, scheduleMessageTool(jobs, session)];
  };
}

/**
 * A turn's agent with its tools: the session's agent (its agent id names it
 * in the catalog), offered the tooling's sources (the built-ins and the MCP
 * servers' tools) narrowed to what that agent may use, and the approval
 * handler that asks the turn's chat under the agent's policies.
 */
export function agentWithTools(deps: {
  agents: AgentCatalog;
  tooling: Tooling;
  /** The turn's model meter (usage and budgets for its place); none: nothing is counted. */
  meterFor?: (ctx: PlacedContext) => ModelMeter | undefined;
}): AgentWithTools {
  const { agents, tooling } = deps;
  // The echo agent calls no tool, and with no tool rounds the model is offered none: a turn gets an empty registry, which /tools shows.
  const offered = (session: Info) => {
    const agent = agents.of(session.agentId);
    return agent.toolMaxRounds === 0 || agent.factory.provider === "echo" ? toolRegistry([]) : agent.tools.narrow(tooling.registry(session));
  };
  const make = (metadata: Record<string, unknown>, placed: PlacedContext) => {
    // The place is the meter's; the turn itself gets its ordinary context.
    const { place: _place, ...ctx } = placed;
    const agent = agents.of(ctx.session.agentId);
    const tools = offered(ctx.session);
    const meter = deps.meterFor?.(placed);
    return agent.factory(metadata, { ...ctx, tools, approval: tooling.handler(ctx, tools, agent.tools.policyOf), ...(meter && { meter }) } as never);
  };
  return Object.assign(make, { offered });
}

/** The agent part: the agents (AGENTS_CONFIG's, or `default` from OPENAI_*; the options' factory in place of default's), the personas and reflection. */
export interface AgentPart {
  agents: AgentCatalog;
  personas: PersonaRegistry;
  reflector: Reflector;
}

export function agentPart(
  base: AppBase,
  stores: StorePart,
  agentsConfig: AgentsConfig,
  usage?: Pick<UsagePart, "meterForSession" | "placeOfSession">,
): AgentPart {
  const { config, log } = base;
  const personaRegistry = personas(config.PERSONAS);
  const agents = configuredCatalog(config, agentsConfig, personaRegistry, log, base.opts.agentFactory);
  const { registry, transcript, memories, kv } = stores;
  const condenser = reflectionCondenser(agents, usage?.meterForSession, usage?.placeOfSession);
  return {
    agents,
    personas: personaRegistry,
    reflector: new Reflector({ registry, transcript, memories, kv, log, everyTurns: config.REFLECT_EVERY_TURNS, condenser }),
  };
}
