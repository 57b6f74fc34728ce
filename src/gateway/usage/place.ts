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

/** A recorded conversation address as the place its calls are charged to (a workspace only where the platform has one). */
export function callPlace(a: { platform: string; chatId: string; workspace?: string | undefined }): CallPlace {
  return { platform: a.platform, chatId: a.chatId, ...(a.workspace !== undefined && { workspace: a.workspace }) };
}
