import { z } from "zod";
import { isTimeZone } from "./zone.js";
import { duration, bool, int, list, optionalString, url, matching } from "./values.js";

const PERSONAS_FIX = `must be a JSON object of persona names to prompts, e.g. {"pirate": "Talk like a pirate."}`;
const promptsByName = z.record(z.string(), z.string());

/** PERSONAS: named system prompts as JSON (a name's rules are the persona registry's, src/agent/personas.ts). */
function personaPrompts() {
  return optionalString().transform((v, ctx): Record<string, string> => {
    if (v === undefined) return {};
    let json: unknown;
    try {
      json = JSON.parse(v);
    } catch {
      ctx.addIssue({ code: "custom", message: `${PERSONAS_FIX} (it is not valid JSON)` });
      return z.NEVER;
    }
    const r = promptsByName.safeParse(json);
    if (!r.success) {
      ctx.addIssue({ code: "custom", message: PERSONAS_FIX });
      return z.NEVER;
    }
    return r.data;
  });
}

/** The model, tools and approvals, personas, context, reflection, scheduled jobs, media, speakers and cost controls. */
export const agentSettings = {
  OPENAI_BASE_URL: url("the OpenAI-compatible API, e.g. https://api.openai.com/v1"),
  OPENAI_API_KEY: optionalString(),
  OPENAI_MODEL: optionalString(),
  MODEL_TEMPERATURE: optionalString(),
  MODEL_MAX_OUTPUT_TOKENS: optionalString(),
  MODEL_THINKING_LEVEL: optionalString(),
  AGENT_TIMEOUT: duration("120s"),
  TOOL_MAX_ROUNDS: int(4, 0, 50),
  TOOL_TIMEOUT: duration("30s"),
  MCP_CONFIG: optionalString(),
  // Several agents, the routes to them, prices and budgets (src/config/agents.ts).
  AGENTS_CONFIG: optionalString(),
  APPROVERS: z.enum(["requester", "admins", "anyone"]).default("requester"),
  APPROVAL_TIMEOUT: duration("10m"),
  PERSONAS: personaPrompts(),
  CONTEXT_MAX_MESSAGES: int(40, 1, 10_000),
  LIVE_SESSIONS_MAX: int(2000, 10, 10_000_000),
  CONTEXT_MAX_CHARS: int(24_000, 100, 10_000_000),
  REFLECT_EVERY_TURNS: int(20, 0, 100_000),
  REFLECT_SWEEP_INTERVAL: duration("15m"),
  DEFAULT_TIMEZONE: z
    .string()
    .default("UTC")
    .refine((v) => isTimeZone(v), "must be an IANA time zone name such as UTC, Europe/Paris or America/New_York"),
  SCHEDULE_MISFIRE_GRACE: duration("10m"),
  // Media, speakers and cost controls (src/runtime/media/, src/runtime/speaker.ts, src/runtime/turn-limit.ts).
  MODEL_VISION: bool(false),
  IMAGE_MAX_BYTES: int(5 * 1024 * 1024, 1024, 100 * 1024 * 1024),
  AUDIO_MAX_BYTES: int(25 * 1024 * 1024, 1024, 100 * 1024 * 1024),
  MEDIA_TIMEOUT: duration("30s"),
  TRANSCRIBE_MODEL: matching(/^[A-Za-z0-9._:/@+-]{1,200}$/, "must be a model name such as whisper-1 (letters, digits and . _ : / @ + -, no spaces)"),
  TRANSCRIBE_BASE_URL: url("the OpenAI-compatible API that serves /audio/transcriptions (default: OPENAI_BASE_URL)"),
  MODEL_SPEAKER_NAMES: z.enum(["name", "prefix"]).default("name"),
  MODELS_ALLOWED: list().superRefine((names, ctx) => {
    const bad = names.find((n) => !/^[A-Za-z0-9._:/@+-]{1,200}$/.test(n));
    if (bad !== undefined)
      ctx.addIssue({ code: "custom", message: `must be a comma-separated list of model names such as gpt-4o-mini,llama3.1:8b (got "${bad}")` });
  }),
  USER_TURNS_PER_MINUTE: int(0, 0, 100_000),
};
