import type { Config } from "../config.js";
import type { Logger } from "../log.js";
import { meteredTranscriber } from "../agent/metered.js";
import type { ModelMeter } from "../agent/model-meter.js";
import { transcriber } from "../agent/transcribe.js";
import type { MessageEvent } from "../runtime/events.js";
import { mediaPreparer, type InputPreparer } from "../runtime/media/input.js";
import type { FileSource } from "../runtime/media/types.js";
import type { GatewayMetrics } from "./metrics.js";

/** Where transcriptions go: TRANSCRIBE_BASE_URL, else the chat model's server (OpenAI itself with only a key). */
export function transcribeBaseUrl(config: Pick<Config, "TRANSCRIBE_BASE_URL" | "OPENAI_BASE_URL" | "OPENAI_API_KEY">): string | undefined {
  return config.TRANSCRIBE_BASE_URL ?? config.OPENAI_BASE_URL ?? (config.OPENAI_API_KEY ? "https://api.openai.com/v1" : undefined);
}

/** The turn's attachment handling from the configuration: vision, transcription, caps and the adapters' file endpoints. */
export function mediaInput(
  config: Config,
  log: Logger,
  metrics: GatewayMetrics,
  files: (platform: string, botId: string) => FileSource | undefined,
  /** The meter of a message's place: its transcriptions count against the same usage and budgets as its turn. */
  meterFor?: (ev: MessageEvent) => ModelMeter | undefined,
): InputPreparer {
  const base = transcribeBaseUrl(config);
  const model = config.TRANSCRIBE_MODEL;
  const transcribe = model && base ? transcriber({ baseUrl: base, apiKey: config.OPENAI_API_KEY, model, timeoutMs: config.AGENT_TIMEOUT }) : undefined;
  const preparer = (ev?: MessageEvent) =>
    mediaPreparer({
      files,
      vision: config.MODEL_VISION,
      maxImageBytes: config.IMAGE_MAX_BYTES,
      maxAudioBytes: config.AUDIO_MAX_BYTES,
      timeoutMs: config.MEDIA_TIMEOUT,
      ...(transcribe && model && { transcribe: meteredTranscriber(transcribe, model, ev && meterFor?.(ev)) }),
      log,
      onFailure: (kind, code) => metrics.mediaFailures.inc({ kind, code }),
    });
  if (!meterFor) return preparer();
  return (ev, signal) => preparer(ev)(ev, signal);
}
