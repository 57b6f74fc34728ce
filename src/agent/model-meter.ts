/**
 * The model meter (issue 29): what every model call passes through so its
 * tokens are counted and its budgets checked before it is made. The agent
 * layer knows only this interface; the gateway builds one per turn from the
 * turn's place (agent, session, sender, chat, workspace) and the store.
 */

export type ModelCallKind = "turn" | "tool_round" | "transcription" | "reflection";

export interface ModelCall {
  kind: ModelCallKind;
  model: string;
  /** The most this call may spend, in tokens (the prompt's estimate plus the output limit): what a budget reserves. */
  maxTokens: number;
  /** Transcription: the audio's duration as the platform gave it, so a cost budget reserves its perMinute price. */
  audioSeconds?: number;
}

export interface ModelUsage {
  model: string;
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
  /** True when the provider sent no usage and the counts are a tokenizer estimate. */
  estimated: boolean;
  latencyMs: number;
  /** Transcription: seconds of audio (priced per minute). */
  audioSeconds?: number;
}

/** One reserved call: settle it with what it used, or release it when no request was made. */
export interface MeterTicket {
  settle(usage: ModelUsage): Promise<void>;
  release(): Promise<void>;
}

export interface ModelMeter {
  /**
   * Before each model call. Throws AgentError code "Budget" (its message the
   * one line the user sees: which budget, when it resets, whom to ask) when a
   * budget that applies is used up; no request is then made.
   */
  reserve(call: ModelCall): Promise<MeterTicket>;
}
