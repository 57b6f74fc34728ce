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
  /** The recording's length as the platform reported it (Telegram, Discord voice messages), in seconds. */
  durationSec?: number;
}

/** What the server answered: the text, and what it says it used when it says (OpenAI's json answer carries `usage`). */
export interface Transcription {
  text: string;
  /** Seconds of audio transcribed: `usage.seconds` (`type: "duration"`, whisper-1), else a top-level `duration`. */
  seconds?: number;
  /** Tokens billed (`usage.type: "tokens"`, the gpt-4o transcribe models). */
  tokens?: { input: number; output: number };
}

/** A transcription as the media layer uses it: the text alone. */
export type Transcriber = (audio: AudioInput, signal: AbortSignal) => Promise<string>;
/** A transcription with what the server said it used, for the meter (meteredTranscriber). */
export type TranscriptionClient = (audio: AudioInput, signal: AbortSignal) => Promise<Transcription>;

/**
 * A client of the OpenAI-compatible `POST /audio/transcriptions` (multipart:
 * `file`, `model`, `response_format=json`). Errors name the server (no
 * query, no key) and quote at most a little of its answer, redacted.
 */
export function transcriber(opts: TranscriberOptions): TranscriptionClient {
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
    let answer: TranscriptionAnswer | undefined;
    try {
      answer = JSON.parse(body) as TranscriptionAnswer;
    } catch {
      answer = undefined;
    }
    if (typeof answer?.text !== "string")
      throw new AgentError(
        "MalformedStream",
        `The transcription server at ${where} answered without a "text" field. Check that it serves the OpenAI transcription API.`,
      );
    return { text: answer.text.trim(), ...usedBy(answer) };
  };
}

interface TranscriptionAnswer {
  text?: unknown;
  duration?: unknown;
  usage?: { type?: unknown; seconds?: unknown; input_tokens?: unknown; output_tokens?: unknown } | null;
}

const count = (n: unknown): n is number => typeof n === "number" && Number.isFinite(n) && n >= 0;

/** What the answer says was used: OpenAI's `usage` (duration or tokens), or verbose_json's `duration`; nothing it does not say. */
function usedBy(a: TranscriptionAnswer): Pick<Transcription, "seconds" | "tokens"> {
  const u = typeof a.usage === "object" && a.usage !== null ? a.usage : undefined;
  const seconds = u?.type === "duration" && count(u.seconds) ? u.seconds : count(a.duration) ? a.duration : undefined;
  const tokens = u?.type === "tokens" && count(u.input_tokens) && count(u.output_tokens) ? { input: u.input_tokens, output: u.output_tokens } : undefined;
  return { ...(seconds !== undefined && { seconds }), ...(tokens && { tokens }) };
}
