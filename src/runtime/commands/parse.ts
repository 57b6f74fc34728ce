/** A slash command as typed: `/name@bot args`. */
export interface ParsedCommand {
  name: string;
  /** The `@bot` suffix, if any, without the @. */
  target?: string;
  args: string;
}

const COMMAND = /^\/([A-Za-z0-9_]{1,32})(?:@([A-Za-z0-9_.-]{1,64}))?(?:\s+([\s\S]*))?$/;

/** Parses a command, or returns undefined when the text is not one. Never throws. */
export function parseCommand(text: unknown): ParsedCommand | undefined {
  if (typeof text !== "string") return undefined;
  const m = COMMAND.exec(text.trim());
  if (!m) return undefined;
  return { name: m[1]!.toLowerCase(), target: m[2], args: (m[3] ?? "").trim() };
}

/** Whether a command is addressed to another bot (`/cmd@otherbot`). */
export function addressedElsewhere(cmd: ParsedCommand, botUsername: string | undefined): boolean {
  if (!cmd.target) return false;
  if (!botUsername) return false;
  return cmd.target.toLowerCase() !== botUsername.replace(/^@/, "").toLowerCase();
}
