import { redact, safeUrl } from "./http-error.js";
import { AgentError } from "./types.js";

export interface TranscriberOptions {
  /** The OpenAI-compatible API root, e.g. https://api.openai.com/v1. */
  baseUrl: string;
  apiKey?: string;
  /** e.g. whisper-1. */
  model: string;
  /** Until the server's whole answer (transcription takes a while on long audio). */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

export interface AudioInput {
  data: Buffer;
  mimeType: string;
  /** A file name with the extension servers use to tell the format (voice.ogg). */
  fileName: string;
}

export type Transcriber = (audio: AudioInput, signal: AbortSignal) => Promise<string>;

/**
 * A client of the OpenAI-compatible `POST /audio/transcriptions` (multipart:
 * `file`, `model`, `response_format=json`). Errors name the server (no
 * query, no key) and quote at most a little of its answer, redacted.
 */
export function transcriber(opts: TranscriberOptions): Transcriber {
  const url = `${opts.baseUrl.replace(/\/+$/, "")}/audio/transcriptions`;
  const where = safeUrl(url);
  return async (audio, signal) => {
    const form = new FormData();
    form.set("file", new Blob([new Uint8Array(audio.data)], { type: audio.mimeType }), audio.fileName);
    form.set("model", opts.model);
    form.set("response_format", "json");
    const headers: Record<string, string> = { accept: "application/json" };
    if (opts.apiKey) headers.authorization = `Bearer ${opts.apiKey}`;
    const timeout = AbortSignal.timeout(opts.timeoutMs ?? 120_000);
    let response: Response;
    try {
      response = await (opts.fetch ?? fetch)(url, { method: "POST", body: form, headers, signal: AbortSignal.any([signal, timeout]) });
    } catch (err) {
      if (signal.aborted) throw new AgentError("Aborted", "The transcription was interrupted.");
      if (timeout.aborted) throw new AgentError("Timeout", `The transcription server at ${where} did not answer in time.`);
      throw new AgentError("Upstream", `The transcription server at ${where} could not be reached. Check TRANSCRIBE_BASE_URL (or OPENAI_BASE_URL).`, {
        cause: err,
      });
    }
    const body = await response.text().catch(() => "");
    if (!response.ok) {
      throw new AgentError(
        response.status === 429 ? "RateLimited" : "Upstream",
        `The transcription server at ${where} answered HTTP ${response.status}: ${redact(body, opts.apiKey).slice(0, 200)}`,
        { status: response.status },
      );
    }
    let text: unknown;
    try {
      text = (JSON.parse(body) as { text?: unknown }).text;
    } catch {
      text = undefined;
    }
    if (typeof text !== "string")
      throw new AgentError(
        "MalformedStream",
        `The transcription server at ${where} answered without a "text" field. Check that it serves the OpenAI transcription API.`,
      );
    return text.trim();
  };
}
