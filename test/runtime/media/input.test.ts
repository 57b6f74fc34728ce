/**
 * The turn's attachment handling on its own: what reaches the agent, which
 * notices the user gets, and when nothing is left to answer.
 */
import { describe, expect, it } from "vitest";
import { mediaPreparer, type MediaOptions } from "../../../src/runtime/media/input.js";
import type { MessageEvent } from "../../../src/runtime/events.js";
import type { FileSource } from "../../../src/runtime/media/types.js";

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(32)]);
const OGG = Buffer.concat([Buffer.from("OggS\0\x02", "binary"), Buffer.alloc(32)]);

const event = (text: string, attachments: MessageEvent["attachments"], platform = "telegram"): MessageEvent =>
  ({
    type: "message",
    text,
    attachments,
    respond: true,
    origin: { platform, chatId: "1", senderId: "1" },
    replyTo: { platform, botId: "b", chatId: "1" },
    conversation: { agentId: "b", userId: "u", channel: "c" },
    receivedAt: new Date(),
  }) as MessageEvent;

/** A file endpoint on a fetch stub: every file is served from memory, so no socket is involved. */
function served(files: Record<string, Buffer>): Pick<MediaOptions, "files" | "fetch"> {
  const source: FileSource = { locate: async (f) => ({ url: `https://files.test/${f.fileId}`, allowedHosts: ["files.test"], label: `file ${f.fileId}` }) };
  return {
    files: (platform) => (platform === "console" ? undefined : source),
    fetch: (async (url: URL) => {
      const data = files[url.pathname.slice(1)];
      return data ? new Response(new Uint8Array(data)) : new Response("gone", { status: 404 });
    }) as typeof fetch,
  };
}
const base = { vision: true, maxImageBytes: 1024, maxAudioBytes: 1024, timeoutMs: 5_000 };
const signal = new AbortController().signal;

describe("mediaPreparer", () => {
  it("an image and a transcribed voice note: image parts, the transcription inlined, no notice", async () => {
    const prep = mediaPreparer({ ...base, ...served({ p: PNG, v: OGG }), transcribe: async (a) => `heard ${a.data.length} bytes of ${a.mimeType}` });
    const r = await prep(
      event("hi", [
        { kind: "photo", fileId: "p" },
        { kind: "voice", fileId: "v" },
      ]),
      signal,
    );
    expect(r.images.map((i) => [i.mimeType, i.data.equals(PNG)])).toEqual([["image/png", true]]);
    expect(r.text).toBe(`hi\n[photo attached]\n[voice note, transcribed]: heard ${OGG.length} bytes of audio/ogg`);
    expect([r.notices, r.nothingToAnswer]).toEqual([[], false]);
  });

  it("a voice note without transcription beside text: the text is answered and the user told about the voice", async () => {
    const r = await mediaPreparer({ ...base, ...served({ v: OGG }) })(event("and also", [{ kind: "voice", fileId: "v" }]), signal);
    expect(r.text).toBe("and also\n[voice attached]");
    expect(r.notices.map((n) => n.text)).toEqual([
      "Voice messages are not supported here, so I can't listen to your voice note. Please type your message instead.",
    ]);
    expect(r.nothingToAnswer).toBe(false);
  });

  it("a platform without a file endpoint, a 404 and bytes that are not audio: polite notices, nothing to answer", async () => {
    const console = await mediaPreparer({ ...base, ...served({}) })(event("", [{ kind: "photo", fileId: "p" }], "console"), signal);
    expect(console.notices.map((n) => n.text)).toEqual(["I couldn't download that image, so I only know that it was sent. Please try sending it again."]);
    expect(console.nothingToAnswer).toBe(true);
    const gone = await mediaPreparer({ ...base, ...served({}), transcribe: async () => "never" })(event("", [{ kind: "audio", fileId: "missing" }]), signal);
    expect(gone.notices.map((n) => n.text)).toEqual(["I couldn't transcribe that audio file. Please try again, or type your message."]);
    const noise = await mediaPreparer({ ...base, ...served({ n: PNG }), transcribe: async () => "never" })(event("", [{ kind: "voice", fileId: "n" }]), signal);
    expect(noise.notices.map((n) => n.text)).toEqual(["I couldn't transcribe that voice note: it is not an audio format I can read."]);
  });

  it("a document that is not an image is described, never downloaded; MODEL_VISION off describes images too", async () => {
    let fetched = 0;
    const s = served({ p: PNG });
    const counting = { ...s, fetch: ((...a: Parameters<typeof fetch>) => (fetched++, s.fetch!(...a))) as typeof fetch };
    const r = await mediaPreparer({ ...base, ...counting })(event("", [{ kind: "document", fileId: "d", name: "a.pdf", mimeType: "application/pdf" }]), signal);
    expect([r.text, r.nothingToAnswer, fetched]).toEqual(["[document attached: a.pdf, application/pdf]", false, 0]);
    const off = await mediaPreparer({ ...base, ...counting, vision: false })(event("", [{ kind: "photo", fileId: "p", size: 40 }]), signal);
    expect([off.text, off.images.length, fetched]).toEqual(["[photo attached: 40 bytes]", 0, 0]);
  });

  it("a stopped turn stops the download and ends the turn instead of answering a notice", async () => {
    const stop = new AbortController();
    const hanging: Pick<MediaOptions, "files" | "fetch"> = {
      files: () => ({ locate: async () => ({ url: "https://files.test/x", allowedHosts: ["files.test"], label: "x" }) }),
      fetch: ((_u: URL, init: RequestInit) => {
        started();
        return new Promise((_r, reject) => init.signal!.addEventListener("abort", () => reject(init.signal!.reason)));
      }) as typeof fetch,
    };
    let started!: () => void;
    const fetching = new Promise<void>((r) => (started = r));
    const p = mediaPreparer({ ...base, ...hanging })(event("", [{ kind: "photo", fileId: "x" }]), stop.signal);
    await fetching;
    stop.abort(new Error("interrupted"));
    await expect(p).rejects.toThrow("interrupted");
  });
});
