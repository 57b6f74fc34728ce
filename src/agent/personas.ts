import { AgentError } from "./types.js";

export const DEFAULT_PERSONA_PROMPT =
  "You are Switchboard, a helpful assistant that people talk to from chat apps such as Discord, Telegram and Slack. " +
  "Answer clearly and concisely, in the language the user writes in. Say so when you are unsure.";

export interface Persona {
  name: string;
  prompt: string;
}

export interface PersonaRegistry {
  /** The prompt of a named persona, or undefined when there is none. */
  get(name: string): string | undefined;
  has(name: string): boolean;
  /** Sorted, `default` included. */
  names(): string[];
  /** The named persona, falling back to `default` for a missing or unknown name. */
  resolve(name?: string): Persona;
}

const NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

function invalid(name: string, why: string): AgentError {
  return new AgentError("Config", `Invalid persona ${JSON.stringify(name)} in the configuration: ${why}. Fix the personas section of the configuration.`);
}

/** Named system prompts from configuration; `default` is always present (configuration may override it). */
export function personas(config: Record<string, string> = {}): PersonaRegistry {
  const map = new Map<string, string>([["default", DEFAULT_PERSONA_PROMPT]]);
  for (const [name, prompt] of Object.entries(config ?? {})) {
    if (!NAME.test(name)) throw invalid(name, "names are 1-64 lowercase letters, digits, '_' or '-', starting with a letter or digit");
    if (typeof prompt !== "string" || prompt.trim() === "") throw invalid(name, "its prompt must be non-empty text");
    map.set(name, prompt.trim());
  }
  return {
    get: (name) => map.get(name),
    has: (name) => map.has(name),
    names: () => [...map.keys()].sort(),
    resolve(name) {
      const prompt = name === undefined ? undefined : map.get(name);
      return prompt === undefined ? { name: "default", prompt: map.get("default") ?? DEFAULT_PERSONA_PROMPT } : { name: name as string, prompt };
    },
  };
}
