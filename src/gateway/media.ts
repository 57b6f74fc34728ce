import type { Config } from "../config.js";
import type { Logger } from "../log.js";
import type { AgentCatalog } from "../agent/catalog.js";
import { transcriber } from "../agent/transcribe.js";
import { mediaPreparer, type InputPreparer } from "../runtime/media/input.js";
import type { FileSource } from "../runtime/media/types.js";
import type { GatewayMetrics } from "./metrics.js";

/** Where transcriptions go: TRANSCRIBE_BASE_URL, else the chat model's server (OpenAI itself with only a key). */
export function transcribeBaseUrl(config: Pick<Config, "TRANSCRIBE_BASE_URL" | "OPENAI_BASE_URL" | "OPENAI_API_KEY">): string | undefined {
  return config.TRANSCRIBE_BASE_URL ?? config.OPENAI_BASE_URL ?? (config.OPENAI_API_KEY ? "https://api.openai.com/v1" : undefined);
}

/**
 * The turn's attachment handling from the configuration: vision, transcription, caps and the adapters' file endpoints.
 * Each agent of AGENTS_CONFIG may say otherwise (`vision`, `transcribeModel`: transcribed on its own endpoint with its
 * own key); a turn is prepared as its session's agent says.
 */
export function mediaInput(
  config: Config,
  log: Logger,
  metrics: GatewayMetrics,
  files: (platform: string, botId: string) => FileSource | undefined,
  agents?: AgentCatalog,
): InputPreparer {
  const base = transcribeBaseUrl(config);
  const common = {
    files,
    maxImageBytes: config.IMAGE_MAX_BYTES,
    maxAudioBytes: config.AUDIO_MAX_BYTES,
    timeoutMs: config.MEDIA_TIMEOUT,
    log,
    onFailure: (kind: string, code: string) => metrics.mediaFailures.inc({ kind, code }),
  };
  const gateway = {
    vision: config.MODEL_VISION,
    ...(config.TRANSCRIBE_MODEL &&
      base && { transcribe: transcriber({ baseUrl: base, apiKey: config.OPENAI_API_KEY, model: config.TRANSCRIBE_MODEL, timeoutMs: config.AGENT_TIMEOUT }) }),
  };
  const fallback = mediaPreparer({ ...common, ...gateway });
  const own = new Map<string, InputPreparer>();
  for (const agent of agents?.list() ?? []) {
    const { vision, transcribeModel, baseUrl, resolvedApiKey } = agent.spec;
    if (vision === undefined && transcribeModel === undefined) continue;
    const transcribe = transcribeModel
      ? {
          transcribe: transcriber({
            baseUrl: baseUrl ?? base ?? "https://api.openai.com/v1",
            apiKey: resolvedApiKey,
            model: transcribeModel,
            timeoutMs: config.AGENT_TIMEOUT,
          }),
        }
      : gateway.transcribe && { transcribe: gateway.transcribe };
    own.set(agent.name, mediaPreparer({ ...common, vision: vision ?? gateway.vision, ...transcribe }));
  }
  if (own.size === 0) return fallback;
  return (ev, signal, session) => (own.get(session ? agents!.of(session.agentId).name : "") ?? fallback)(ev, signal, session);
}
