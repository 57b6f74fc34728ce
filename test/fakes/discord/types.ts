/** Discord API v10 objects as the fake produces them (JSON shapes, snake_case, ids as strings). */

export interface DUser {
  id: string;
  username: string;
  discriminator: string;
  global_name: string | null;
  avatar: string | null;
  bot?: boolean;
  [key: string]: unknown;
}

export interface DChannel {
  id: string;
  type: number;
  guild_id?: string;
  name?: string;
  parent_id?: string | null;
  recipients?: DUser[];
  [key: string]: unknown;
}

export interface DGuild {
  id: string;
  name: string;
  channels: DChannel[];
  threads: DChannel[];
  members: Record<string, unknown>[];
  [key: string]: unknown;
}

export interface DMessage {
  id: string;
  channel_id: string;
  guild_id?: string;
  author: DUser;
  content: string;
  timestamp: string;
  edited_timestamp: string | null;
  mentions: DUser[];
  type: number;
  flags: number;
  message_reference?: { type?: number; message_id?: string; channel_id?: string; guild_id?: string };
  referenced_message?: DMessage | null;
  [key: string]: unknown;
}

/** Channel types used by the fake. */
export const ChannelType = {
  GuildText: 0,
  DM: 1,
  GuildVoice: 2,
  GroupDM: 3,
  GuildCategory: 4,
  GuildAnnouncement: 5,
  AnnouncementThread: 10,
  PublicThread: 11,
  PrivateThread: 12,
  GuildForum: 15,
} as const;

/** Gateway intents the fake looks at. */
export const Intents = {
  Guilds: 1 << 0,
  GuildMessages: 1 << 9,
  GuildMessageReactions: 1 << 10,
  DirectMessages: 1 << 12,
  MessageContent: 1 << 15,
} as const;

/**
 * Application flags (GET /applications/@me, READY's application). A bot in
 * under 100 servers with the Message Content toggle on has
 * GatewayMessageContentLimited; a verified one in 100+ servers
 * GatewayMessageContent.
 */
export const ApplicationFlags = {
  GatewayMessageContent: 1 << 18,
  GatewayMessageContentLimited: 1 << 19,
} as const;

/** One REST request the bot made. `path` is below /api/v10, e.g. `/channels/1/messages`. */
export interface DRestCall {
  method: string;
  path: string;
  query: Record<string, string>;
  body: unknown;
  files: { field: string; name: string; size: number }[];
  auth?: string;
  at: number;
  status?: number;
  response?: unknown;
}

/** A message the bot created (channel message, interaction response or follow-up). */
export interface DSentMessage {
  id: string;
  channelId: string;
  guildId?: string;
  content: string;
  embeds: unknown[];
  /** message_reference.message_id of a reply. */
  replyTo?: string;
  via: "channel" | "interaction" | "followup";
  interactionId?: string;
  ephemeral: boolean;
  /** A deferred interaction response not yet edited ("is thinking..."). */
  loading: boolean;
  /** Every version of content, oldest first (edits append). */
  history: string[];
  files: string[];
  message: DMessage;
  at: number;
}

export interface DRateLimitFault {
  kind: "ratelimit";
  /** Seconds, sent as-is in `Retry-After` and `retry_after` (real Discord: integer header, float body). */
  retryAfter: number;
  scope: "user" | "global" | "shared";
  global: boolean;
  bucket: string;
}

export interface DErrorFault {
  kind: "error";
  status: number;
  code: number;
  message: string;
}

export type DFault = DRateLimitFault | DErrorFault;

/** A gateway frame the fake sent or received. */
export interface DGatewayFrame {
  dir: "in" | "out";
  connection: number;
  op: number;
  t?: string;
  s?: number;
  at: number;
}

export class DApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: number,
    message: string,
    readonly errors?: unknown,
  ) {
    super(message);
  }
  body(): Record<string, unknown> {
    return this.errors ? { message: this.message, code: this.code, errors: this.errors } : { message: this.message, code: this.code };
  }
}

/** 400 Invalid Form Body with one field error, like Discord's validation answers. */
export function formError(path: string[], code: string, message: string): DApiError {
  let errors: Record<string, unknown> = { _errors: [{ code, message }] };
  for (const key of [...path].reverse()) errors = { [key]: errors };
  return new DApiError(400, 50035, "Invalid Form Body", errors);
}
