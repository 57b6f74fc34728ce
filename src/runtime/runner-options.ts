import type { Info } from "../session/info.js";
import type { Agent } from "../agent/types.js";
import type { PersonaRegistry } from "../agent/personas.js";
import type { Logger } from "../log.js";
import type { Registry } from "../session/registry.js";
import type { MemoryStore } from "../store/memories.js";
import type { TranscriptStore } from "../store/transcript.js";
import type { BusyPolicy } from "./busy-policy.js";
import type { Ledger } from "./ledger.js";
import type { ContextLimits, LiveSession } from "./live-session.js";
import type { InputPreparer } from "./media/input.js";
import type { AgentContext } from "./runner.js";
import type { SinkRouter } from "./sink-router.js";

/** What a Runner is built from: its stores, its agent, and its limits. */
export interface RunnerOptions {
  registry: Registry;
  transcript: TranscriptStore;
  /** Builds the agent for a turn from the session's metadata (and the session, for per-user tools). */
  agentFactory: (metadata: Record<string, unknown>, ctx: AgentContext) => Agent;
  personas: PersonaRegistry;
  /** A session's persona prompt when it depends on more than its own choice (its agent's persona, issue 29); default: `personas.resolve(info.persona)`. */
  personaOf?: (info: Info) => string;
  memories?: MemoryStore;
  ledger?: Ledger;
  sinks?: SinkRouter;
  busyPolicy?: BusyPolicy;
  context?: ContextLimits;
  /** A session's own context limits (its agent's, issue 29), fixed when it opens; default: `context`. */
  contextOf?: (info: Info) => ContextLimits | undefined;
  turnTimeoutMs?: number;
  typingIntervalMs?: number;
  /**
   * At most this many live sessions stay in memory; past it (by a tenth, so
   * the sweep is rare) the least recently used idle ones are closed. A closed
   * session reopens from the store on its next event.
   */
  maxLiveSessions?: number;
  /** The typing indicator first shows when a turn has run this long (a quick answer needs none). */
  typingDelayMs?: number;
  log?: Logger;
  /** Re-read the transcript window from the store for every turn (several processes share the database). */
  freshWindow?: boolean;
  /** Called after every committed turn (reflection hooks in here). Never awaited. */
  onTurnCommitted?: (session: LiveSession) => void;
  /** Called with the session a rotation (/new, /reset, an operator's) just archived (reflection reviews it). Never awaited. */
  onRotated?: (previousId: string) => void;
  /**
   * Until when (epoch ms) a turn's failing commit is retried, given the
   * inbound events it answers (their INBOUND_TTL); undefined: not retried.
   * See durable-commit.ts.
   */
  commitDeadline?: (inboundIds: string[]) => number | undefined;
  /** Told of every failed commit attempt (counted in /metrics). */
  onCommitError?: (err: unknown) => void;
  /** Fetches a message's attachments for the turn (images for vision, voice to text): src/runtime/media/. */
  prepareInput?: InputPreparer;
}
