import type { Config } from "../config.js";
import type { Logger } from "../log.js";
import type { AgentCatalog } from "../agent/catalog.js";
import { meteredTranscriber } from "../agent/metered.js";
import type { ModelMeter } from "../agent/model-meter.js";
import { transcriber, type TranscriptionClient } from "../agent/transcribe.js";
import type { MessageEvent } from "../runtime/events.js";
import { mediaPreparer, type InputPreparer } from "../runtime/media/input.js";
import type { FileSource } from "../runtime/media/types.js";
import type { GatewayMetrics } from "./metrics.js";

/** Where transcriptions go: TRANSCRIBE_BASE_URL, else the chat model's server (OpenAI itself with only a key). */
export function transcribeBaseUrl(config: Pick<Config, "TRANSCRIBE_BASE_URL" | "OPENAI_BASE_URL" | "OPENAI_API_KEY">): string | undefined {
  return config.TRANSCRIBE_BASE_URL ?? config.OPENAI_BASE_URL ?? (config.OPENAI_API_KEY ? "https://api.openai.com/v1" : undefined);
}

type Transcribe = { model: string; run: TranscriptionClient };

/**
 * The turn's attachment handling from the configuration: vision, transcription, caps and the adapters' file endpoints.
 * Each agent of AGENTS_CONFIG may say otherwise (`vision`, `transcribeModel`: transcribed on its own endpoint with its
 * own key); a turn is prepared as its session's agent says. Transcriptions are metered calls of the message's place
 * (`meterFor`): they count against the same usage and budgets as its turn.
 */
export function mediaInput(
  config: Config,
  log: Logger,
  metrics: GatewayMetrics,
  files: (platform: string, botId: string) => FileSource | undefined,
  agents?: AgentCatalog,
  meterFor?: (ev: MessageEvent) => ModelMeter | undefined,
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
  const gatewayTranscribe: Transcribe | undefined =
    config.TRANSCRIBE_MODEL && base
      ? {
          model: config.TRANSCRIBE_MODEL,
          run: transcriber({ baseUrl: base, apiKey: config.OPENAI_API_KEY, model: config.TRANSCRIBE_MODEL, timeoutMs: config.AGENT_TIMEOUT }),
        }
      : undefined;
  const preparerOf = (vision: boolean, t: Transcribe | undefined) => (ev?: MessageEvent) =>
    mediaPreparer({ ...common, vision, ...(t && { transcribe: meteredTranscriber(t.run, t.model, ev && meterFor?.(ev)) }) });
  const fallback = preparerOf(config.MODEL_VISION, gatewayTranscribe);
  const own = new Map<string, (ev?: MessageEvent) => InputPreparer>();
  for (const agent of agents?.list() ?? []) {
    const { vision, transcribeModel, baseUrl, resolvedApiKey } = agent.spec;
    if (vision === undefined && transcribeModel === undefined) continue;
    const t: Transcribe | undefined = transcribeModel
      ? {
          model: transcribeModel,
          run: transcriber({
            baseUrl: baseUrl ?? base ?? "https://api.openai.com/v1",
            apiKey: resolvedApiKey,
            model: transcribeModel,
            timeoutMs: config.AGENT_TIMEOUT,
          }),
        }
      : gatewayTranscribe;
    own.set(agent.name, preparerOf(vision ?? config.MODEL_VISION, t));
  }
  if (own.size === 0 && !meterFor) return fallback();
  return (ev, signal, session) => {
    const of = (session && own.get(agents!.of(session.agentId).name)) ?? fallback;
    return of(ev)(ev, signal, session);
  };
}
