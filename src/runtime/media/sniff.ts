/**
 * magic-bytes.js builds its whole signature tree when it is evaluated (a few ms of every start):
 * imported on the first attachment instead, which the bundle turns into a module evaluated then.
 */
let filetypemime: ((bytes: Uint8Array) => string[]) | undefined;
async function typesOf(bytes: Buffer): Promise<string[]> {
  filetypemime ??= (await import("magic-bytes.js")).filetypemime;
  return filetypemime(bytes.subarray(0, 64));
}

/** What vision models take (OpenAI, and the local servers that copy it). */
export const IMAGE_TYPES = ["image/jpeg", "image/png", "image/gif", "image/webp"] as const;

/**
 * The file's type from its first bytes, never from what a header or the
 * sender claims. Undefined when it is not one we know.
 */
export async function sniffImage(bytes: Buffer): Promise<(typeof IMAGE_TYPES)[number] | undefined> {
  return (await typesOf(bytes)).find((m): m is (typeof IMAGE_TYPES)[number] => (IMAGE_TYPES as readonly string[]).includes(m));
}

/** Audio as transcription servers take it: Ogg/Opus voice notes, MP3, M4A/MP4, WAV, WebM, FLAC. */
export async function sniffAudio(bytes: Buffer): Promise<{ mimeType: string; ext: string } | undefined> {
  const types = await typesOf(bytes);
  const pick = (re: RegExp) => types.find((t) => re.test(t));
  if (pick(/ogg/)) return { mimeType: "audio/ogg", ext: "ogg" };
  if (pick(/mpeg|mp3/)) return { mimeType: "audio/mpeg", ext: "mp3" };
  if (pick(/wav|wave/)) return { mimeType: "audio/wav", ext: "wav" };
  if (pick(/flac/)) return { mimeType: "audio/flac", ext: "flac" };
  if (pick(/webm|matroska/)) return { mimeType: "audio/webm", ext: "webm" };
  if (pick(/mp4|m4a|quicktime/)) return { mimeType: "audio/mp4", ext: "m4a" };
  return undefined;
}
