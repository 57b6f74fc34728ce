import type { Info } from "../../session/info.js";
import type { ImageInput } from "../../agent/content.js";
import type { Transcriber } from "../../agent/transcribe.js";
import { isAgentError } from "../../agent/types.js";
import type { Logger } from "../../log.js";
import { errInfo } from "../../log.js";
import type { AttachmentInfo, MessageEvent, Severity } from "../events.js";
import { describeAttachment } from "../pending.js";
import { downloadFile } from "./download.js";
import { MediaError } from "./errors.js";
import { sniffAudio, sniffImage } from "./sniff.js";
import type { FileSource } from "./types.js";

export interface MediaOptions {
  /** The file endpoint of the adapter that received the event (by platform and bot), if it has one. */
  files(platform: string, botId: string): FileSource | undefined;
  /** MODEL_VISION: images go to the model as image parts. */
  vision: boolean;
  maxImageBytes: number;
  maxAudioBytes: number;
  /** MEDIA_TIMEOUT, per download. */
  timeoutMs: number;
  /** With TRANSCRIBE_MODEL: voice notes and audio files become text. */
  transcribe?: Transcriber;
  log?: Logger;
  fetch?: typeof fetch;
  /** Counts a download or transcription that failed, by code (in /metrics). */
  onFailure?(what: "image" | "audio", code: string): void;
}

/** A turn's user input once its attachments are fetched. */
export interface PreparedInput {
  /** The user's text as the agent and the transcript see it: attachments described, transcriptions inlined. */
  text: string;
  images: ImageInput[];
  /** Polite replies about attachments that could not be used. */
  notices: Array<{ severity: Severity; text: string }>;
  /** Nothing left for the agent to answer (an oversize image alone, a voice note without transcription): only the notices are sent. */
  nothingToAnswer: boolean;
}

/** `session`: the turn's session, whose agent may see and hear differently from the others (issue 29). */
export type InputPreparer = (ev: MessageEvent, signal: AbortSignal, session?: Info) => Promise<PreparedInput>;

const mb = (n: number) => (n < 1024 * 1024 ? `${Math.max(1, Math.round(n / 1024))} KB` : `${(n / (1024 * 1024)).toFixed(1).replace(/\.0$/, "")} MB`);
const isImage = (a: AttachmentInfo) => a.kind === "photo" || (a.kind === "document" && !!a.mimeType?.startsWith("image/"));
const isAudio = (a: AttachmentInfo) => a.kind === "voice" || a.kind === "audio";

/**
 * Turns a message's attachments into what the model can use: images as
 * image parts (MODEL_VISION), voice and audio as transcribed text
 * (TRANSCRIBE_MODEL). Each file is fetched from the adapter's own file
 * endpoint with a size cap and a timeout, and its type is sniffed from its
 * bytes. Whatever cannot be used gets a polite notice; nothing is dropped
 * silently, and the rest of the message still reaches the agent.
 */
export function mediaPreparer(o: MediaOptions): InputPreparer {
  return async (ev, signal) => {
    const input = new MessageInput(o, ev, signal);
    for (const a of ev.attachments ?? []) {
      signal.throwIfAborted();
      if (o.vision && isImage(a)) await input.image(a);
      else if (isAudio(a)) await input.audio(a);
      else input.described(a);
    }
    return input.prepared();
  };
}

/** One message's input as its attachments are taken in turn: the text lines, the images, the notices. */
class MessageInput {
  readonly #lines: string[];
  readonly #images: ImageInput[] = [];
  readonly #notices: PreparedInput["notices"] = [];
  #usable: boolean;
  readonly #source: FileSource | undefined;

  constructor(
    private readonly o: MediaOptions,
    private readonly ev: MessageEvent,
    private readonly signal: AbortSignal,
  ) {
    this.#lines = ev.text ? [ev.text] : [];
    this.#usable = ev.text.trim().length > 0;
    this.#source = o.files(ev.replyTo.platform, ev.replyTo.botId);
  }

  /** Only described: the model is told it was sent. */
  described(a: AttachmentInfo): void {
    this.#lines.push(describeAttachment(a));
    this.#usable = true;
  }

  /** An image for the model (MODEL_VISION), or a notice saying why it could not be looked at. */
  async image(a: AttachmentInfo): Promise<void> {
    const { o } = this;
    this.#lines.push(describeAttachment(a));
    try {
      const data = await this.#fetch(a, o.maxImageBytes);
      const mimeType = await sniffImage(data);
      if (!mimeType) throw new MediaError("WrongType", "the file is not a JPEG, PNG, GIF or WebP image");
      this.#images.push({ mimeType, data });
      this.#usable = true;
    } catch (err) {
      const code = this.#failed("image", a, err);
      const size = err instanceof MediaError ? (err.size ?? a.size) : a.size;
      this.#notices.push({
        severity: "warn",
        text:
          code === "TooLarge"
            ? `That image is too large for me to look at${size ? ` (${mb(size)})` : ""}; the limit is ${mb(o.maxImageBytes)}. Please send a smaller one.`
            : code === "WrongType"
              ? "I couldn't look at that image: it is not a JPEG, PNG, GIF or WebP picture."
              : "I couldn't download that image, so I only know that it was sent. Please try sending it again.",
      });
    }
  }

  /** A voice note or audio file transcribed into the text (TRANSCRIBE_MODEL), or a notice saying why not. */
  async audio(a: AttachmentInfo): Promise<void> {
    const { o } = this;
    const label = a.kind === "voice" ? "voice note" : "audio file";
    if (!o.transcribe) {
      this.#lines.push(describeAttachment(a));
      this.#notices.push({
        severity: "info",
        text: `Voice messages are not supported here, so I can't listen to your ${label}. Please type your message instead.`,
      });
      return;
    }
    try {
      const data = await this.#fetch(a, o.maxAudioBytes);
      const type = await sniffAudio(data);
      if (!type) throw new MediaError("WrongType", "the file is not audio a transcription server reads");
      const audio = { data, mimeType: type.mimeType, fileName: `${a.kind}.${type.ext}`, ...(a.durationSec !== undefined && { durationSec: a.durationSec }) };
      const said = await o.transcribe(audio, this.signal);
      this.#lines.push(`[${label}, transcribed]: ${said || "(no speech recognised)"}`);
      this.#usable = this.#usable || said.length > 0;
      if (!said) this.#notices.push({ severity: "info", text: `I couldn't make out any words in that ${label}.` });
    } catch (err) {
      const code = this.#failed("audio", a, err);
      this.#lines.push(describeAttachment(a));
      this.#notices.push({
        severity: "warn",
        text:
          code === "TooLarge"
            ? `That ${label} is too long for me to transcribe; the limit is ${mb(o.maxAudioBytes)}.`
            : code === "WrongType"
              ? `I couldn't transcribe that ${label}: it is not an audio format I can read.`
              : code === "transcribe-Budget" && err instanceof Error
                ? `I couldn't transcribe that ${label}: ${err.message}`
                : `I couldn't transcribe that ${label}. Please try again, or type your message.`,
      });
    }
  }

  prepared(): PreparedInput {
    return { text: this.#lines.join("\n"), images: this.#images, notices: this.#notices, nothingToAnswer: !this.#usable && this.#notices.length > 0 };
  }

  async #fetch(a: AttachmentInfo, maxBytes: number): Promise<Buffer> {
    const { platform } = this.ev.replyTo;
    if (!this.#source) throw new MediaError("Unsupported", `${platform} gives no file downloads`);
    const loc = await this.#source.locate(a, this.signal, this.ev.replyTo).catch((err: unknown) => {
      if (err instanceof MediaError) throw err;
      throw new MediaError("Failed", `the ${a.kind} could not be located on ${platform}`, { cause: err });
    });
    return downloadFile(loc, { maxBytes, timeoutMs: this.o.timeoutMs, signal: this.signal, fetch: this.o.fetch });
  }

  /** Counts and logs a failed attachment and gives its code; an abort of the turn is rethrown, not counted. */
  #failed(what: "image" | "audio", a: AttachmentInfo, err: unknown): string {
    if (this.signal.aborted) throw this.signal.reason ?? err;
    const code = err instanceof MediaError ? err.code : isAgentError(err) ? `transcribe-${err.code}` : "error";
    this.o.onFailure?.(what, code);
    this.o.log?.warn({ platform: this.ev.replyTo.platform, kind: a.kind, code, err: errInfo(err) }, `could not use an ${what} attachment`);
    return code;
  }
}
