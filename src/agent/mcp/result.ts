import { jsonText } from "./bounds.js";

/** An MCP result as the text the model reads: text parts joined, other parts named. */
export function resultText(r: { content?: unknown[]; isError?: boolean; structuredContent?: unknown }): string {
  const parts = (r.content ?? []).map((c) => {
    const item = c as { type?: string; text?: string; mimeType?: string; resource?: { uri?: string; text?: string } };
    if (item.type === "text") return item.text ?? "";
    if (item.type === "resource") return item.resource?.text ?? `[resource ${item.resource?.uri ?? ""}]`;
    return `[${item.type ?? "unknown"} content${item.mimeType ? ` (${item.mimeType})` : ""}]`;
  });
  let text = parts.join("\n");
  if (!text && r.structuredContent !== undefined) text = jsonText(r.structuredContent);
  return r.isError ? `error: ${text || "the tool reported an error"}` : text;
}
