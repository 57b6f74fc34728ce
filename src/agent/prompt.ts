export const MEMORY_HEADING = "## Things to remember";

/**
 * The system prompt of a turn: the persona's prompt, then the memories of the
 * session's scope as a list. Memories are written by reflection and may span
 * lines; continuation lines are indented so each stays one list item.
 */
export function buildSystemPrompt(persona: string, memories: readonly string[] = []): string {
  const items = memories
    .map((m) => m.trim())
    .filter((m) => m.length > 0)
    .map((m) => `- ${m.replace(/\r?\n/g, "\n  ")}`);
  const base = persona.trim();
  if (items.length === 0) return base;
  return `${base}\n\n${MEMORY_HEADING}\n${items.join("\n")}`;
}
