import type { ReplyAddress } from "../../runtime/events.js";

export const adapterKey = (platform: string, botId: string) => `${platform}:${botId}`;
export const chatKey = (a: ReplyAddress) => `${a.platform}:${a.botId}:${a.chatId}:${a.threadId ?? ""}`;
