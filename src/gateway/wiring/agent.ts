import type { Config } from "../../config.js";
import type { Logger } from "../../log.js";
import { createAgentFactory, type AgentFactory, type TurnOverrides } from "../../agent/factory.js";
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
import type { UsagePart } from "./usage.js";

/** What makes a turn's agent: the configured factory, or a plain function in its place (tests). */
export type TurnAgentFactory = AgentFactory | ((metadata: Record<string, unknown>, ctx: AgentContext & TurnOverrides) => Agent);

/** The agent factory the model settings in the configuration describe (the echo agent when no provider is set). */
export function configuredAgentFactory(config: Config, log: Logger): AgentFactory {
  return createAgentFactory({
    baseUrl: config.OPENAI_BASE_URL,
    apiKey: config.OPENAI_API_KEY,
    model: config.OPENAI_MODEL,
    temperature: config.MODEL_TEMPERATURE !== undefined ? Number(config.MODEL_TEMPERATURE) : undefined,
    maxOutputTokens: config.MODEL_MAX_OUTPUT_TOKENS !== undefined ? Number(config.MODEL_MAX_OUTPUT_TOKENS) : undefined,
    thinkingLevel: config.MODEL_THINKING_LEVEL as never,
    maxToolRounds: config.TOOL_MAX_ROUNDS,
    toolTimeoutMs: config.TOOL_TIMEOUT,
    speakerNames: config.MODEL_SPEAKER_NAMES,
    modelsAllowed: config.MODELS_ALLOWED,
    log,
  });
}

/** Reflection condenses with the model when one is configured (its calls metered for the session), and without one (extractively) otherwise. */
export function reflectionCondenser(agentFactory: TurnAgentFactory, meterFor?: (session: Info) => ModelMeter): Condenser {
  if (!("provider" in agentFactory) || agentFactory.provider !== "openai") return extractiveCondenser();
  return agentCondenser((session) => {
    const meter = session && meterFor?.(session);
    return (agentFactory as AgentFactory)({}, meter ? { meter } : undefined);
  });
}

/** A turn's agent maker, and what it offers the model in a session (what `/tools` lists: one source for both). */
export type AgentWithTools = ((metadata: Record<string, unknown>, ctx: AgentContext) => Agent) & {
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
 * A turn's agent with its tools (the tooling's sources: the built-ins and the
 * MCP servers' tools), and the approval handler that asks the turn's chat.
 */
export function agentWithTools(deps: {
  agentFactory: TurnAgentFactory;
  tooling: Tooling;
  /** TOOL_MAX_ROUNDS: 0 offers the model no tools at all. */
  maxToolRounds?: number;
  /** The turn's model meter (usage and budgets for its place); none: nothing is counted. */
  meterFor?: (ctx: AgentContext) => ModelMeter | undefined;
}): AgentWithTools {
  const { agentFactory, tooling } = deps;
  // The echo agent calls no tool, and with no tool rounds the model is offered none: a turn gets an empty registry, which /tools shows.
  const none = deps.maxToolRounds === 0 || ("provider" in agentFactory && agentFactory.provider === "echo");
  const offered = (session: Info) => (none ? toolRegistry([]) : tooling.registry(session));
  const make = (metadata: Record<string, unknown>, ctx: AgentContext) => {
    const tools = offered(ctx.session);
    const meter = deps.meterFor?.(ctx);
    return agentFactory(metadata, { ...ctx, tools, approval: tooling.handler(ctx, tools), ...(meter && { meter }) } as never);
  };
  return Object.assign(make, { offered });
}

/** The agent part: the turn's agent factory (the configured model, or the options'), the personas and reflection. */
export interface AgentPart {
  agentFactory: TurnAgentFactory;
  personas: PersonaRegistry;
  reflector: Reflector;
}

export function agentPart(base: AppBase, stores: StorePart, usage?: Pick<UsagePart, "meterForSession">): AgentPart {
  const { config, log } = base;
  const agentFactory = base.opts.agentFactory ?? configuredAgentFactory(config, log);
  const { registry, transcript, memories, kv } = stores;
  const condenser = reflectionCondenser(agentFactory, usage?.meterForSession);
  return {
    agentFactory,
    personas: personas(config.PERSONAS),
    reflector: new Reflector({ registry, transcript, memories, kv, log, everyTurns: config.REFLECT_EVERY_TURNS, condenser }),
  };
}
