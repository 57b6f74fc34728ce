/**
 * Forwarded and shared messages are content, never commands. A forward of
 * "/approve CODE" must not run as the forwarder's own command, so each
 * normalizer hands the forwarded text to the gateway behind a header line:
 * the text no longer starts with "/", and the agent sees what it is.
 */
export interface Forwarded {
  /** Who wrote the forwarded message, when the platform says. */
  from?: string;
  text: string;
}

export function forwardedText(items: ReadonlyArray<Forwarded>, comment = ""): string {
  const blocks = items
    .filter((f) => f.text.trim() !== "")
    .map((f) => `[Forwarded message${f.from ? ` from ${f.from.replace(/[\r\n\]]+/g, " ").trim()}` : ""}]\n${f.text}`);
  if (blocks.length === 0) return comment;
  const c = comment.trim();
  return c === "" ? blocks.join("\n\n") : `${blocks.join("\n\n")}\n\n${c}`;
}
