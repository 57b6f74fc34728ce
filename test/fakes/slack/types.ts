/** Shapes used by the Slack fake. Wire objects keep Slack's snake_case. */

export interface SlackIdentity {
  teamId: string;
  teamName: string;
  teamDomain: string;
  botUserId: string;
  botId: string;
  appId: string;
  botName: string;
}

export type ConversationType = "channel" | "group" | "mpim" | "im";

export interface SlackConversation {
  id: string;
  type: ConversationType;
  name?: string;
  /** For im: the other user. */
  user?: string;
  members?: string[];
  /** The bot left it (conversations.leave): posting there answers not_in_channel. */
  left?: boolean;
}

export interface SlackUser {
  id: string;
  name: string;
  real_name?: string;
  is_bot?: boolean;
  tz?: string;
  [key: string]: unknown;
}

/** One Web API request the app made. */
export interface SlackCall {
  method: string;
  params: Record<string, unknown>;
  token?: string;
  contentType: string;
  at: number;
  status?: number;
  response?: Record<string, unknown>;
}

/** A message the app posted (chat.postMessage / chat.postEphemeral), with edits. */
export interface SlackSentMessage {
  channel: string;
  ts: string;
  threadTs?: string;
  text: string;
  blocks?: unknown[];
  ephemeralTo?: string;
  /** Every version of text, oldest first (chat.update appends). */
  history: string[];
  /** How Slack shows `text` with mrkdwn on, and what its rules would object to (see mrkdwn.ts); absent with mrkdwn off. */
  mrkdwn?: { shown: string; problems: string[] };
  message: Record<string, unknown>;
  at: number;
}

export interface SlackEnvelope {
  envelope_id: string;
  type: string;
  payload: Record<string, unknown>;
  accepts_response_payload: boolean;
  retry_attempt?: number;
  retry_reason?: string;
}

export interface SlackAck {
  envelopeId: string;
  type: string;
  /** The `payload` the app put in its ack (e.g. a slash command's response), if any. */
  payload?: Record<string, unknown>;
  /** ms from sending the envelope to receiving the ack. */
  ms: number;
  at: number;
}

export interface SlackFault {
  status: number;
  error: string;
  retryAfter?: number;
  /** The call takes effect (the message is posted) and then the answer is this failure: an answer lost on the way back. */
  afterEffect?: boolean;
}

/** What an HTTP-mode app answered to a signed Events API / slash command request. */
export interface SlackHttpDelivery {
  url: string;
  status: number;
  body: string;
  headers: Record<string, string>;
  /** Time to the app's HTTP answer (its ack), ms. */
  ackMs: number;
  at: number;
}

export interface ResponseUrlPost {
  id: string;
  body: Record<string, unknown>;
  at: number;
}

/** An Events API `event_callback` body. */
export interface EventCallback {
  token: string;
  team_id: string;
  api_app_id: string;
  event: Record<string, unknown>;
  type: "event_callback";
  event_id: string;
  event_time: number;
  authorizations: Record<string, unknown>[];
  is_ext_shared_channel: boolean;
  event_context: string;
  [key: string]: unknown;
}

export class SlackApiError extends Error {
  constructor(
    readonly error: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(error);
  }
}
