/**
 * Where a model call without a message is made (a scheduled job's turn, a session's review): the chat as a
 * message there names it (its external id), its platform and workspace. Charged there, the chat, workspace
 * and platform budgets apply to it as to a chat turn in that chat.
 */
export interface CallPlace {
  platform: string;
  chatId: string;
  /** The Slack team or Discord guild. */
  workspace?: string;
}
