import { readFileSync } from "node:fs";
import { z } from "zod";
import { SwitchboardError } from "../errors.js";

/**
 * AGENTS_CONFIG: several agents on one gateway, the routes that pick one for
 * each place, the price table and the budgets (issue 29). Parsed and checked
 * here, at the edge; an invalid file stops the start with one line naming the
 * agent (or route, price, budget) and the field. Secrets are never in the
 * file: an agent names the environment variable that holds its key.
 *
 * The agent `default` is the OPENAI_* variables' agent (today's setups, with
 * no file, are exactly that one agent); the file may override it by name.
 */

export const DEFAULT_AGENT = "default";

const NAME = /^[a-z0-9][a-z0-9_-]{0,39}$/;
const MODEL = /^[A-Za-z0-9._:/@+-]{1,200}$/;
const ENV_NAME = /^[A-Z_][A-Z0-9_]{0,127}$/;
const POLICIES = ["auto", "ask", "deny"] as const;

const agentName = z.string().regex(NAME, "must be 1-40 lowercase letters, digits, _ or -, starting with a letter or digit (e.g. support)");

const agentSchema = z
  .object({
    baseUrl: z
      .string()
      .url("must be an absolute http(s) URL such as https://api.openai.com/v1")
      .refine((v) => /^https?:/i.test(v), "must use http or https")
      .optional(),
    /** The key itself is allowed only for local endpoints' placeholder keys; prefer apiKeyEnv. */
    apiKey: z.string().min(1).max(500).optional(),
    apiKeyEnv: z.string().regex(ENV_NAME, "must be an environment variable name such as SUPPORT_KEY").optional(),
    model: z.string().regex(MODEL, "must be a model name such as gpt-4o-mini (letters, digits and . _ : / @ + -)").optional(),
    /** The system prompt: the persona's text, or the name of a PERSONAS entry. */
    persona: z.string().min(1).max(20_000).optional(),
    temperature: z.number().min(0).max(2).optional(),
    maxOutputTokens: z.number().int().min(1).max(1_000_000).optional(),
    thinkingLevel: z.enum(["off", "low", "medium", "high"]).optional(),
    /** Tool name patterns (`*` wildcards) to a policy; the first pattern that matches wins, in the object's order. */
    tools: z.record(z.string().min(1).max(200), z.enum(POLICIES)).optional(),
    /** MCP servers (MCP_CONFIG names) this agent may use; absent means all of them. */
    mcpServers: z.array(z.string().min(1).max(100)).max(100).optional(),
    vision: z.boolean().optional(),
    transcribeModel: z.string().regex(MODEL, "must be a model name such as whisper-1").optional(),
    contextMaxMessages: z.number().int().min(1).max(10_000).optional(),
    contextMaxChars: z.number().int().min(100).max(10_000_000).optional(),
    toolMaxRounds: z.number().int().min(0).max(50).optional(),
    /** Shown by `/agent`. */
    description: z.string().max(500).optional(),
  })
  .strict();

const matchSchema = z
  .object({
    platform: z
      .string()
      .regex(/^[a-z][a-z0-9_-]{0,39}$/, "must be a platform name such as telegram, discord, slack or console")
      .optional(),
    /** Slack team id (T...) or enterprise id (E...). */
    team: z.string().min(1).max(100).optional(),
    /** Discord guild (server) id. */
    guild: z.string().min(1).max(100).optional(),
    /** The chat's id as the adapter names it, or as the platform's API does (a Slack channel C…, a Telegram chat, a Discord channel, the console's dm:<name>). */
    chat: z.string().min(1).max(200).optional(),
    /** A thread or forum topic inside the chat. */
    thread: z.string().min(1).max(200).optional(),
    kind: z.enum(["private", "group"]).optional(),
    /** The sender's platform user id. */
    sender: z.string().min(1).max(200).optional(),
  })
  .strict();

const routeSchema = z
  .object({
    match: matchSchema,
    agent: agentName,
    /** Other agents a user here may switch to with `/agent <name>`. */
    choosable: z.array(agentName).max(50).optional(),
  })
  .strict();

const perMillion = z.number().min(0).max(1_000_000);
const priceSchema = z
  .object({
    /** Money per million tokens, in the operator's currency. */
    input: perMillion,
    cachedInput: perMillion.optional(),
    output: perMillion,
    /** Transcription: money per minute of audio. */
    perMinute: perMillion.optional(),
  })
  .strict();

const budgetSchema = z
  .object({
    per: z.enum(["user", "chat", "agent", "workspace", "global"]),
    period: z.enum(["day", "month"]),
    tokens: z.number().int().min(1).optional(),
    cost: z.number().positive().optional(),
    /** Only this agent's calls count (and are limited). */
    agent: agentName.optional(),
    /** Only this platform's calls (with per: workspace, the Slack team or Discord guild). */
    platform: z.string().min(1).max(40).optional(),
    /** Told to the user when the budget is used up: whom to ask. */
    contact: z.string().max(200).optional(),
  })
  .strict()
  .refine((b) => (b.tokens === undefined) !== (b.cost === undefined), { message: "must set exactly one of tokens or cost", path: ["tokens"] });

export const agentsFileSchema = z
  .object({
    agents: z.record(agentName, agentSchema).default({}),
    routes: z.array(routeSchema).max(10_000).default([]),
    prices: z.record(z.string().regex(MODEL), priceSchema).default({}),
    budgets: z.array(budgetSchema).max(1000).default([]),
  })
  .strict();

export type AgentSpec = z.infer<typeof agentSchema> & {
  name: string;
  /** The key, resolved from apiKeyEnv or the file. */
  resolvedApiKey?: string;
  /** `default` made from the OPENAI_* variables (the file does not define it). */
  fromEnvironment?: true;
};
export type RouteMatch = z.infer<typeof matchSchema>;
export type Route = z.infer<typeof routeSchema>;
export type Price = z.infer<typeof priceSchema>;
export type Budget = z.infer<typeof budgetSchema>;

export interface AgentsConfig {
  /** Every agent by name, `default` included (from OPENAI_* unless the file names it). */
  agents: ReadonlyMap<string, AgentSpec>;
  routes: readonly Route[];
  prices: Readonly<Record<string, Price>>;
  budgets: readonly Budget[];
}

export class AgentsConfigError extends SwitchboardError<"Invalid"> {
  override readonly name = "AgentsConfigError";
  constructor(message: string) {
    super("Invalid", message);
  }
}

/** What `default` is when the file does not define it: the OPENAI_* variables (and the model settings beside them). */
export interface DefaultAgentSettings {
  baseUrl?: string;
  apiKey?: string;
  model?: string;
  temperature?: number;
  maxOutputTokens?: number;
  thinkingLevel?: AgentSpec["thinkingLevel"];
}

/** The default agent's settings from the configuration's OPENAI_* and MODEL_* values (as the gateway reads them). */
export function defaultAgentSettingsOf(
  config: Partial<
    Record<"OPENAI_BASE_URL" | "OPENAI_API_KEY" | "OPENAI_MODEL" | "MODEL_TEMPERATURE" | "MODEL_MAX_OUTPUT_TOKENS" | "MODEL_THINKING_LEVEL", string>
  >,
): DefaultAgentSettings {
  const num = (v: string | undefined) => (v === undefined ? undefined : Number(v));
  return {
    baseUrl: config.OPENAI_BASE_URL,
    apiKey: config.OPENAI_API_KEY,
    model: config.OPENAI_MODEL,
    temperature: num(config.MODEL_TEMPERATURE),
    maxOutputTokens: num(config.MODEL_MAX_OUTPUT_TOKENS),
    thinkingLevel: config.MODEL_THINKING_LEVEL as DefaultAgentSettings["thinkingLevel"],
  };
}

function where(path: ReadonlyArray<PropertyKey>): string {
  const [top, key, ...rest] = path.map(String);
  const field = rest.length ? rest.join(".") : undefined;
  if (top === "agents" && key !== undefined) return `agent "${key}"${field ? `, field ${field}` : ""}`;
  if (top === "routes" && key !== undefined) return `route ${Number(key) + 1}${field ? `, field ${field}` : ""}`;
  if (top === "prices" && key !== undefined) return `price of model "${key}"${field ? `, field ${field}` : ""}`;
  if (top === "budgets" && key !== undefined) return `budget ${Number(key) + 1}${field ? `, field ${field}` : ""}`;
  return path.length ? `field ${path.map(String).join(".")}` : "the file";
}

/**
 * Parses AGENTS_CONFIG's text. `env` resolves each agent's apiKeyEnv (a
 * missing variable is an error naming the agent and the variable, never a
 * value). Throws AgentsConfigError with one line.
 */
export function parseAgentsConfig(text: string | undefined, env: NodeJS.ProcessEnv, defaults: DefaultAgentSettings, source = "AGENTS_CONFIG"): AgentsConfig {
  let json: unknown = {};
  if (text !== undefined) {
    try {
      json = JSON.parse(text);
    } catch (e) {
      throw new AgentsConfigError(
        `${source} is not valid JSON (${(e as Error).message.split("\n")[0]}): fix the file, or unset AGENTS_CONFIG to run one agent from OPENAI_*.`,
      );
    }
  }
  const r = agentsFileSchema.safeParse(json);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    const message =
      issue.code === "unrecognized_keys"
        ? `has an unknown field ${issue.keys.map((k) => `"${k}"`).join(", ")}: remove it or check its spelling`
        : `: ${issue.message}`;
    throw new AgentsConfigError(`${source}: ${where(issue.path)}${message.startsWith(":") ? message : ` ${message}`}.`);
  }
  const file = r.data;
  const agents = new Map<string, AgentSpec>();
  if (!file.agents[DEFAULT_AGENT]) {
    const d: AgentSpec = { name: DEFAULT_AGENT, fromEnvironment: true };
    if (defaults.baseUrl) d.baseUrl = defaults.baseUrl;
    if (defaults.apiKey) d.resolvedApiKey = defaults.apiKey;
    if (defaults.model) d.model = defaults.model;
    if (defaults.temperature !== undefined) d.temperature = defaults.temperature;
    if (defaults.maxOutputTokens !== undefined) d.maxOutputTokens = defaults.maxOutputTokens;
    if (defaults.thinkingLevel !== undefined) d.thinkingLevel = defaults.thinkingLevel;
    agents.set(DEFAULT_AGENT, d);
  }
  for (const [name, spec] of Object.entries(file.agents)) {
    if (spec.apiKey !== undefined && spec.apiKeyEnv !== undefined)
      throw new AgentsConfigError(
        `${source}: agent "${name}", field apiKey: set apiKey or apiKeyEnv, not both (prefer apiKeyEnv: keys belong in the environment).`,
      );
    let resolvedApiKey = spec.apiKey;
    if (spec.apiKeyEnv !== undefined) {
      resolvedApiKey = env[spec.apiKeyEnv]?.trim() || undefined;
      if (!resolvedApiKey)
        throw new AgentsConfigError(
          `${source}: agent "${name}", field apiKeyEnv: the variable ${spec.apiKeyEnv} is not set; set it in the environment or .env.`,
        );
    }
    if ((spec.baseUrl !== undefined || resolvedApiKey !== undefined) && spec.model === undefined)
      throw new AgentsConfigError(`${source}: agent "${name}", field model: required with baseUrl or an API key (e.g. "gpt-4o-mini").`);
    agents.set(name, { ...spec, name, ...(resolvedApiKey !== undefined && { resolvedApiKey }) });
  }
  file.routes.forEach((route, i) => {
    for (const [field, name] of [["agent", route.agent] as const, ...(route.choosable ?? []).map((n) => ["choosable", n] as const)]) {
      if (!agents.has(name))
        throw new AgentsConfigError(
          `${source}: route ${i + 1}, field ${field}: no agent is named "${name}" (the agents are ${[...agents.keys()].join(", ")}).`,
        );
    }
  });
  file.budgets.forEach((b, i) => {
    if (b.agent !== undefined && !agents.has(b.agent))
      throw new AgentsConfigError(`${source}: budget ${i + 1}, field agent: no agent is named "${b.agent}" (the agents are ${[...agents.keys()].join(", ")}).`);
  });
  return { agents, routes: file.routes, prices: file.prices, budgets: file.budgets };
}

/** Reads and parses the file AGENTS_CONFIG names (or none: the one agent `default`). */
export function loadAgentsConfig(path: string | undefined, env: NodeJS.ProcessEnv, defaults: DefaultAgentSettings): AgentsConfig {
  if (path === undefined) return parseAgentsConfig(undefined, env, defaults);
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    throw new AgentsConfigError(
      `AGENTS_CONFIG names ${path}, which cannot be read (${(e as NodeJS.ErrnoException).code ?? "error"}): fix the path or unset AGENTS_CONFIG.`,
    );
  }
  return parseAgentsConfig(text, env, defaults, `AGENTS_CONFIG (${path})`);
}
