import { echoAgent } from "./echo.js";
import { openAiAgent } from "./openai.js";
import type { OpenAiAgentOptions } from "./openai-client.js";
import type { ModelMeter } from "./model-meter.js";
import type { ApprovalHandler, ToolRegistry } from "./tools.js";
import { AgentError, noopLog, THINKING_LEVELS, type Agent, type ModelSettings, type ThinkingLevel } from "./types.js";

/** Session metadata keys the factory reads; slash commands write them. */
export const METADATA_KEYS = {
  model: "model.name",
  thinkingLevel: "model.thinking_level",
  temperature: "model.temperature",
  maxOutputTokens: "model.max_output_tokens",
} as const;

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };
const ok = <T>(value: T): Parsed<T> => ({ ok: true, value });
const fail = <T>(error: string): Parsed<T> => ({ ok: false, error });

const MODEL_NAME = /^[A-Za-z0-9._:/@+-]{1,200}$/;

/** For `/model`: names as OpenAI, Ollama (`llama3.1:8b`), vLLM and OpenRouter (`org/model`) spell them. */
export function parseModelName(s: unknown): Parsed<string> {
  const v = typeof s === "string" ? s.trim() : "";
  if (MODEL_NAME.test(v) && /[A-Za-z0-9]/.test(v)) return ok(v);
  return fail(
    "A model name is 1-200 letters, digits and . _ : / @ + - with no spaces, for example gpt-4o-mini, llama3.1:8b or meta-llama/Llama-3.1-8B-Instruct.",
  );
}

/** For `/think`. */
export function parseThinkingLevel(s: unknown): Parsed<ThinkingLevel> {
  const v = typeof s === "string" ? s.trim().toLowerCase() : "";
  return (THINKING_LEVELS as readonly string[]).includes(v) ? ok(v as ThinkingLevel) : fail(`The thinking level must be one of ${THINKING_LEVELS.join(", ")}.`);
}

function toNumber(s: unknown): number | undefined {
  if (typeof s === "number") return s;
  if (typeof s !== "string" || s.trim() === "") return undefined;
  return Number(s.trim());
}

/** For `/temperature`. */
export function parseTemperature(s: unknown): Parsed<number> {
  const n = toNumber(s);
  if (n !== undefined && Number.isFinite(n) && n >= 0 && n <= 2) return ok(n);
  return fail("The temperature must be a number from 0 to 2, for example 0.7 (lower is more focused, higher more varied).");
}

export function parseMaxOutputTokens(s: unknown): Parsed<number> {
  const n = toNumber(s);
  if (n !== undefined && Number.isInteger(n) && n >= 1 && n <= 1_000_000) return ok(n);
  return fail("The max output tokens must be a whole number from 1 to 1000000, for example 1024.");
}

/**
 * The turn's settings: each metadata value that parses wins, anything else
 * (absent or invalid) falls back to the default underneath. `invalid` lists
 * the keys that were present but rejected, for logging.
 */
export function settingsFromMetadata(metadata: Record<string, unknown>, defaults: ModelSettings, invalid: string[] = []): ModelSettings {
  const pick = <T>(key: string, parse: (v: unknown) => Parsed<T>, fallback: T | undefined): T | undefined => {
    if (!(key in metadata) || metadata[key] === undefined || metadata[key] === null) return fallback;
    const r = parse(metadata[key]);
    if (r.ok) return r.value;
    invalid.push(key);
    return fallback;
  };
  const out: ModelSettings = { model: pick(METADATA_KEYS.model, parseModelName, defaults.model) ?? defaults.model };
  const thinkingLevel = pick(METADATA_KEYS.thinkingLevel, parseThinkingLevel, defaults.thinkingLevel);
  const temperature = pick(METADATA_KEYS.temperature, parseTemperature, defaults.temperature);
  const chosen = pick(METADATA_KEYS.maxOutputTokens, parseMaxOutputTokens, defaults.maxOutputTokens);
  // The operator's limit (MODEL_MAX_OUTPUT_TOKENS, an agent's maxOutputTokens) is a ceiling: /maxtokens may
  // lower it, never raise it, since a budget's overrun is bounded by one call's maximum.
  const maxOutputTokens = chosen !== undefined && defaults.maxOutputTokens !== undefined ? Math.min(chosen, defaults.maxOutputTokens) : chosen;
  if (thinkingLevel !== undefined) out.thinkingLevel = thinkingLevel;
  if (temperature !== undefined) out.temperature = temperature;
  if (maxOutputTokens !== undefined) out.maxOutputTokens = maxOutputTokens;
  return out;
}

export interface AgentDefaults extends Omit<OpenAiAgentOptions, "baseUrl" | "settings" | "apiKey"> {
  /** OPENAI_BASE_URL. With neither it nor apiKey set, no provider is configured and every turn gets the echo agent. */
  baseUrl?: string;
  /** OPENAI_API_KEY. Alone, it means OpenAI itself at https://api.openai.com/v1. */
  apiKey?: string;
  /** OPENAI_MODEL; required once a provider is configured. */
  model?: string;
  thinkingLevel?: ThinkingLevel;
  temperature?: number;
  maxOutputTokens?: number;
  /** MODELS_ALLOWED: a session's model outside it (chosen before the list was set) falls back to the default model. */
  modelsAllowed?: readonly string[];
}

/** Per-turn extras, for what depends on the session: tools scoped to its user, an approval handler that asks its chat. */
export interface TurnOverrides {
  tools?: ToolRegistry;
  approval?: ApprovalHandler;
  /** The turn's model meter: usage and budgets for its place. */
  meter?: ModelMeter;
  /** Other per-turn facts a custom factory may read (the session, the event); the default factory ignores them. */
  [extra: string]: unknown;
}

export type AgentFactory = ((metadata: Record<string, unknown>, overrides?: TurnOverrides) => Agent) & { readonly provider: "echo" | "openai" };

const OPENAI_URL = "https://api.openai.com/v1";

/**
 * Builds the agent for every turn from the session's metadata over the
 * configured defaults, so a `/model` or `/think` takes effect on the next
 * turn. Invalid defaults fail here, at startup, with what to fix.
 */
export function createAgentFactory(defaults: AgentDefaults = {}): AgentFactory {
  const baseUrl = defaults.baseUrl?.trim() || undefined;
  const apiKey = defaults.apiKey?.trim() || undefined;
  if (!baseUrl && !apiKey) return Object.assign(() => echoAgent(), { provider: "echo" as const });

  const model = parseModelName(defaults.model);
  if (!model.ok)
    throw new AgentError("Config", `OPENAI_MODEL is missing or invalid, and it is required when OPENAI_BASE_URL or OPENAI_API_KEY is set. ${model.error}`);
  const base: ModelSettings = { model: model.value };
  const check = <T>(what: string, v: unknown, parse: (v: unknown) => Parsed<T>): T | undefined => {
    if (v === undefined) return undefined;
    const r = parse(v);
    if (!r.ok) throw new AgentError("Config", `The configured default ${what} is invalid. ${r.error}`);
    return r.value;
  };
  const thinkingLevel = check("thinking level", defaults.thinkingLevel, parseThinkingLevel);
  const temperature = check("temperature", defaults.temperature, parseTemperature);
  const maxOutputTokens = check("max output tokens", defaults.maxOutputTokens, parseMaxOutputTokens);
  if (thinkingLevel !== undefined) base.thinkingLevel = thinkingLevel;
  if (temperature !== undefined) base.temperature = temperature;
  if (maxOutputTokens !== undefined) base.maxOutputTokens = maxOutputTokens;

  const { model: _m, thinkingLevel: _t, temperature: _temp, maxOutputTokens: _max, modelsAllowed, ...rest } = defaults;
  const log = defaults.log ?? noopLog;
  const options = { ...rest, baseUrl: baseUrl ?? OPENAI_URL, apiKey };
  // Validate the URL now rather than on the first message.
  openAiAgent({ ...options, settings: base });

  const factory = (metadata: Record<string, unknown>, overrides: TurnOverrides = {}): Agent => {
    const invalid: string[] = [];
    const settings = settingsFromMetadata(metadata ?? {}, base, invalid);
    if (modelsAllowed?.length && settings.model !== base.model && !modelsAllowed.includes(settings.model)) {
      log.warn({ model: settings.model }, "the session's model is not in MODELS_ALLOWED; using the default model");
      settings.model = base.model;
    }
    if (invalid.length > 0) log.warn({ keys: invalid }, "ignoring invalid model settings in session metadata; using the defaults for them");
    return openAiAgent({
      ...options,
      ...(overrides.tools && { tools: overrides.tools }),
      ...(overrides.approval && { approval: overrides.approval }),
      ...(overrides.meter && { meter: overrides.meter }),
      settings,
    });
  };
  return Object.assign(factory, { provider: "openai" as const });
}
