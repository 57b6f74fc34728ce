import type { Info } from "../../session/info.js";
import type { PersonaRegistry } from "../../agent/personas.js";
import type { TranscriptStore } from "../../store/transcript.js";
import type { MessageEvent, Severity } from "../events.js";
import type { ConversationCapabilities } from "../interceptors.js";
import type { LiveSession } from "../live-session.js";

/**
 * Who may run a command: anyone; an admin of the place (ADMIN_USERS, or the place's own administrator the
 * platform names, Slack's installer of the app in that workspace); or an operator of the whole gateway
 * (ADMIN_USERS only), for what reaches past the place (every budget, every platform's pairing codes).
 */
export type CommandAccess = "anyone" | "admin" | "operator";

/** What a command may cancel in its session before it runs (CommandSpec.cancels). */
export type Cancellable = "approvals";

export interface CommandContext {
  event: MessageEvent;
  session: LiveSession;
  can: ConversationCapabilities;
  args: string;
  /** The name the command was called by (an alias, for instance /reset). */
  name: string;
  notify(severity: Severity, text: string): void;
}

export interface CommandSpec {
  name: string;
  aliases?: string[];
  summary: string;
  usage?: string;
  access?: CommandAccess;
  /**
   * What the command cancels before it runs (CommandOptions.cancel does it):
   * "approvals", the tool calls its session waits on a person for (/stop,
   * /new: a turn held by an approval would never stop or become idle); a
   * function of the command when only some uses move the conversation (`/agent <name>` to an agent
   * allowed here, not `/agent`, nor a name it refuses).
   */
  cancels?: Cancellable | ((ctx: CommandContext) => Cancellable | undefined);
  /** Runs the command; the message is consumed (a command never reaches a turn). */
  run(ctx: CommandContext): Promise<void> | void;
}

export interface CommandOptions {
  transcript: TranscriptStore;
  personas: PersonaRegistry;
  /** Command names only operators may run (overrides each command's default). */
  adminCommands?: string[];
  /** The model shown by /status when the session sets none (its agent's, given the session). */
  defaultModel?: string | ((info: Info) => string | undefined);
  /** The session's agent, which /status names when set (several agents, issue 29). */
  agentOf?: (info: Info) => string;
  /** MODELS_ALLOWED: the only models /model may choose (empty or unset: any valid name). */
  modelsAllowed?: readonly string[];
  /** Extra commands (the gateway adds /approve). */
  extra?: CommandSpec[];
  /** How each Cancellable is cancelled in a session, `reason` naming the command (`/new`); without one, nothing is. */
  cancel?: Partial<Record<Cancellable, (sessionId: string, reason: string) => Promise<unknown>>>;
}
