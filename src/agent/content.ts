/**
 * Multimodal user content: images as OpenAI-style content parts, and how a
 * group speaker's name reaches the model. ChatMessage keeps `content` a
 * string (the transcript's text); images ride beside it and only the wire
 * format combines them.
 */

/** An image for a vision model: its sniffed type and bytes. */
export interface ImageInput {
  mimeType: string;
  data: Buffer;
}

export type ContentPart = { type: "text"; text: string } | { type: "image_url"; image_url: { url: string } };

/** The user content on the wire: a plain string without images, else a text part followed by one image_url part per image (data URLs). */
export function userContent(text: string, images: readonly ImageInput[] | undefined): string | ContentPart[] {
  if (!images?.length) return text;
  const parts: ContentPart[] = text ? [{ type: "text", text }] : [];
  for (const i of images) parts.push({ type: "image_url", image_url: { url: `data:${i.mimeType};base64,${i.data.toString("base64")}` } });
  return parts;
}

/**
 * How a group speaker's name reaches the model: the message's `name` field
 * (OpenAI), or a `[Alice] ` prefix on the text, for servers that reject or
 * ignore `name` (MODEL_SPEAKER_NAMES=prefix).
 */
export type SpeakerNames = "name" | "prefix";

/** The `[Alice] ` prefix: brackets in the name are replaced so the prefix cannot be closed early. */
export function speakerPrefix(name: string): string {
  return `[${name
    .replace(/[[\]]+/g, " ")
    .replace(/\s+/g, " ")
    .trim()
    .slice(0, 64)}] `;
}

/** OpenAI refuses a `name` outside [a-zA-Z0-9_-]{1,64}; a display name such as "Ana María" must not fail the turn. */
export function wireName(name: string | undefined): { name?: string } {
  const clean = (name ?? "")
    .replace(/[^a-zA-Z0-9_-]+/g, "_")
    .replace(/^_+|_+$/g, "")
    .slice(0, 64);
  return clean ? { name: clean } : {};
}
