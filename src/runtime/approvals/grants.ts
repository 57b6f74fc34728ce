/**
 * "Always" grants, kept in the KV store: where one holds (a chat, or a thread or forum topic that is a
 * conversation of its own, unless THREAD_SESSIONS=parent makes threads share their chat's session) and
 * whom it covers (the conversation, or one requester in it: decision.ts alwaysScope says which a press gives).
 */
import { toolGrantKey, type ApprovalRecord } from "../../store/approvals.js";
import { codecs, type ReplyAddress } from "../../store/codecs.js";
import type { KvStore } from "../../store/kv.js";

/**
 * The thread or forum topic a group's reply address is in, when it is a conversation of its own beside its
 * chat (a Telegram forum topic, a Slack thread); undefined for the chat itself, for a private chat (whose
 * threads are the one person's), and where a thread is a chat of its own (Discord: its chatId is the thread).
 */
function conversationThread(to: Pick<ReplyAddress, "chatId" | "threadId" | "kind">): string | undefined {
  return to.kind === "private" || to.threadId === to.chatId ? undefined : to.threadId;
}

/** The conversation (thread or topic) an approval was asked in: its card's reply address's. */
const threadOfApproval = (rec: Pick<ApprovalRecord, "id" | "replyTo" | "privateChat">): string | undefined =>
  rec.privateChat ? undefined : conversationThread(codecs.approvalReplyTo.decode(rec.replyTo, rec.id));

export class ToolGrants {
  constructor(
    private readonly kv: Pick<KvStore, "get" | "set">,
    private readonly threadsShareChat: boolean,
  ) {}

  /** Whether `tool` is granted where `to` points, to everyone or to `requester`: the verdict's note, else undefined. */
  async holds(to: ReplyAddress, tool: string, requester: string): Promise<string | undefined> {
    const thread = this.threadsShareChat ? undefined : conversationThread(to);
    const scope = { platform: to.platform, botId: to.botId, chatId: to.chatId, ...(thread !== undefined && { threadId: thread }), tool };
    if ((await this.kv.get(toolGrantKey(scope))) === "1") return "always in this chat";
    if ((await this.kv.get(toolGrantKey(scope, requester))) === "1") return "always for you in this chat";
    return undefined;
  }

  /** An "Always" press on `rec`: its conversation's grant, or (`requesterId` given) that requester's in it. */
  async grant(rec: ApprovalRecord, requesterId?: string): Promise<void> {
    const thread = this.threadsShareChat ? undefined : threadOfApproval(rec);
    await this.kv.set(toolGrantKey({ ...rec, ...(thread !== undefined && { threadId: thread }) }, requesterId), "1");
  }
}
