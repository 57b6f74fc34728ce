/** The Bot API objects the Telegram fake produces (a subset of https://core.telegram.org/bots/api). */

export interface TgUser {
  id: number;
  is_bot: boolean;
  first_name: string;
  last_name?: string;
  username?: string;
  language_code?: string;
}

export type TgChatType = "private" | "group" | "supergroup" | "channel";

export interface TgChat {
  id: number;
  type: TgChatType;
  title?: string;
  username?: string;
  first_name?: string;
  last_name?: string;
  is_forum?: boolean;
}

export interface TgEntity {
  type: string;
  offset: number;
  length: number;
  url?: string;
  language?: string;
  custom_emoji_id?: string;
  user?: TgUser;
}

export interface TgPhotoSize {
  file_id: string;
  file_unique_id: string;
  width: number;
  height: number;
  file_size?: number;
}

export interface TgFileObject {
  file_id: string;
  file_unique_id: string;
  file_size?: number;
  file_name?: string;
  mime_type?: string;
  duration?: number;
}

export interface TgMessage {
  message_id: number;
  message_thread_id?: number;
  is_topic_message?: boolean;
  from?: TgUser;
  chat: TgChat;
  date: number;
  edit_date?: number;
  text?: string;
  entities?: TgEntity[];
  caption?: string;
  caption_entities?: TgEntity[];
  photo?: TgPhotoSize[];
  document?: TgFileObject;
  voice?: TgFileObject;
  reply_to_message?: TgMessage;
  reply_markup?: unknown;
  [key: string]: unknown;
}

export interface TgCallbackQuery {
  id: string;
  from: TgUser;
  message?: TgMessage;
  chat_instance: string;
  data?: string;
}

export interface TgUpdate {
  update_id: number;
  message?: TgMessage;
  edited_message?: TgMessage;
  callback_query?: TgCallbackQuery;
  [key: string]: unknown;
}

/** One request the bot made to the fake. */
export interface TgCall {
  method: string;
  params: Record<string, unknown>;
  /** ms since epoch when the request arrived. */
  at: number;
  /** HTTP status the fake answered with (set when the answer is sent). */
  status?: number;
  /** `result` of a successful answer, or the error description. */
  result?: unknown;
  error?: string;
}

/** A message the bot sent (sendMessage), as the fake stored it. */
export interface TgSentMessage {
  chatId: number;
  chatType: TgChatType;
  messageId: number;
  threadId?: number;
  /** Text as the bot sent it (markup included). */
  rawText: string;
  /** Text after parse_mode processing, as Telegram would show it. */
  text: string;
  entities: TgEntity[];
  parseMode?: string;
  replyToMessageId?: number;
  replyMarkup?: unknown;
  /** Every version of rawText, oldest first (edits append). */
  history: string[];
  message: TgMessage;
  at: number;
}

export interface TgFault {
  status: number;
  description?: string;
  retryAfter?: number;
  /** Only calls whose parameters this accepts get the fault (e.g. a sendMessage with reply_markup: an approval card); others pass. */
  when?: (params: Record<string, unknown>) => boolean;
}

export class TgApiError extends Error {
  constructor(
    readonly code: number,
    readonly description: string,
    readonly parameters?: Record<string, unknown>,
  ) {
    super(description);
  }
}
