/**
 * The gateway's agents (issue 29): one factory per AGENTS_CONFIG agent, its
 * system prompt, what it may use of the tools, and the routes that pick one
 * for each place. With no AGENTS_CONFIG there is one agent, `default`, made
 * from OPENAI_* exactly as before.
 */
import { DEFAULT_AGENT, type AgentSpec, type AgentsConfig } from "../config/agents.js";
import { agentNameOf } from "../session/agent-id.js";
import { agentToolRules, type AgentToolRules } from "./agent-tools.js";
import { createAgentFactory, type AgentDefaults, type TurnOverrides } from "./factory.js";
import type { PersonaRegistry } from "./personas.js";
import { routeAgent, type Place, type RoutedAgent } from "./routing.js";
import { noopLog, type Agent } from "./types.js";

/** A turn's agent maker: the configured factory, or a plain function in its place (tests). */
export type AnyAgentFactory = ((metadata: Record<string, unknown>, overrides: TurnOverrides) => Agent) & { readonly provider?: "echo" | "openai" };

export interface CatalogAgent {
  name: string;
  spec: AgentSpec;
  factory: AnyAgentFactory;
  /** Its system prompt (the persona's text, or the PERSONAS entry it names); undefined: the default persona. */
  persona?: string;
  tools: AgentToolRules;
  /** TOOL_MAX_ROUNDS, or the agent's own: 0 offers the model no tools. */
  toolMaxRounds: number;
}

export interface AgentCatalog {
  /** Every agent, `default` first. */
  list(): readonly CatalogAgent[];
  get(name: string): CatalogAgent | undefined;
  /**
   * The agent a session runs with (its agent id names it). An agent no longer
   * in the file (a session made before a change) runs as `default`.
   */
  of(agentId: string): CatalogAgent;
  /** The agent of a place, and whom a user there may choose. */
  route(place: Place): RoutedAgent;
  /**
   * The persona prompt of a session: the one it chose (`/persona`, `/new
   * <persona>`), else its agent's, else the default persona.
   */
  personaOf(session: { agentId: string; persona?: string }): string;
}

/** What every agent shares: the gateway's settings beside the model (timeouts, speaker names, MODELS_ALLOWED, the log). */
export type SharedAgentSettings = Omit<
  AgentDefaults,
  "baseUrl" | "apiKey" | "model" | "temperature" | "maxOutputTokens" | "thinkingLevel" | "maxToolRounds"
> & {
  maxToolRounds: number;
};

export function agentCatalog(
  config: AgentsConfig,
  shared: SharedAgentSettings,
  personas: PersonaRegistry,
  /** Replaces the `default` agent's factory (tests, embedders). */
  defaultFactory?: AnyAgentFactory,
): AgentCatalog {
  const byName = new Map<string, CatalogAgent>();
  const ordered = [...config.agents.values()].sort((a, b) => (a.name === DEFAULT_AGENT ? -1 : b.name === DEFAULT_AGENT ? 1 : 0));
  for (const spec of ordered) {
    const toolMaxRounds = spec.toolMaxRounds ?? shared.maxToolRounds;
    const factory =
      spec.name === DEFAULT_AGENT && defaultFactory
        ? defaultFactory
        : createAgentFactory({
            ...shared,
            baseUrl: spec.baseUrl,
            apiKey: spec.resolvedApiKey,
            model: spec.model,
            temperature: spec.temperature,
            maxOutputTokens: spec.maxOutputTokens,
            thinkingLevel: spec.thinkingLevel,
            maxToolRounds: toolMaxRounds,
          });
    const persona = spec.persona === undefined ? undefined : (personas.get(spec.persona) ?? spec.persona);
    byName.set(spec.name, { name: spec.name, spec, factory, ...(persona !== undefined && { persona }), tools: agentToolRules(spec), toolMaxRounds });
  }
  const fallback = byName.get(DEFAULT_AGENT)!;
  const list = [...byName.values()];
  const gone = new Set<string>();
  const of = (agentId: string): CatalogAgent => {
    const name = agentNameOf(agentId);
    const agent = byName.get(name);
    if (agent) return agent;
    // A session made under an agent the file no longer has: said once per name, then answered by `default`.
    if (!gone.has(name)) {
      gone.add(name);
      (shared.log ?? noopLog).warn({ agent: name }, "a session's agent is not in AGENTS_CONFIG any more; the agent default answers its turns");
    }
    return fallback;
  };
  return {
    list: () => list,
    get: (name) => byName.get(name),
    of,
    route: (place) => routeAgent(config.routes, place),
    personaOf: (session) =>
      session.persona !== undefined ? personas.resolve(session.persona).prompt : (of(session.agentId).persona ?? personas.resolve(undefined).prompt),
  };
}
