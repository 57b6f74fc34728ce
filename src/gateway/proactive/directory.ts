import { hash } from "node:crypto";
import { setBounded } from "../../bounded.js";
import { bindingAgentIdOf } from "../../session/agent-id.js";
import { safeInfo } from "../../session/rotation.js";
import type { Logger } from "../../log.js";
import { errInfo } from "../../log.js";
import { chatBinding } from "../../session/binding-key.js";
import type { Registry } from "../../session/registry.js";
import { codecs, type ConversationTemplate } from "../../store/codecs.js";
import type { ConversationAddressRecord, ConversationAddressStore } from "../../store/proactive.js";
import type { InboundEnvelope, Platform, ReplyAddress } from "../contract.js";
import type { ChatRef, ConversationRef } from "../../config/conversation-ref.js";

/** What an event synthesized for a conversation needs (ConversationAddress.template, its codec in src/store/codecs.ts). */
export type AddressTemplate = ConversationTemplate;

/** A conversation a proactive message can reach. */
export interface ResolvedConversation {
  key: string;
  platform: Platform;
  botId: string;
  chatId: string;
  /** "" when the conversation is a whole chat. */
  threadId: string;
  bindingKey: string;
  template: AddressTemplate;
}

export type Resolution = { ok: true; conversation: ResolvedConversation } | { ok: false; status: 404 | 409 | 422; error: string };

/** Remembered per process so each conversation's address is written once, and again only when it changes. */
const SEEN_LIMIT = 50_000;

/**
 * What #seen keeps of an address: its SHA-1, 28 characters, not the address (a binding key
 * and a template, 300 to 500 characters), which at 10,000 chats held 4.5 MB of the heap. A
 * collision would only skip one rewrite of a changed address, and is not a practical concern.
 */
const digestOf = (address: string): string => hash("sha1", address, "base64");

const chatKeyOf = (platform: string, botId: string, chatId: string, threadId: string | undefined) => `${platform}:${botId}:${chatId}:${threadId ?? ""}`;

/** Routing extras that belong to one message (a Discord interaction) are not part of a conversation's address. */
function durableAddress(a: ReplyAddress & { platform: Platform }): ReplyAddress & { platform: Platform } {
  const { replyToMessageId: _q, extra, ...rest } = a;
  const kept = extra ? Object.fromEntries(Object.entries(extra).filter(([k]) => k !== "interactionToken" && k !== "applicationId")) : {};
  return Object.keys(kept).length ? { ...rest, extra: kept } : rest;
}

/**
 * The durable directory of conversations the gateway has handled a message
 * in (ConversationAddress). Proactive messages (the HTTP API, hooks) can only
 * reach a conversation found here: someone must have talked to the bot there
 * first, so a token cannot make the bot write into a chat it was never in.
 */
export class ConversationDirectory {
  /** Conversation key -> digestOf(its address as last written). */
  readonly #seen = new Map<string, string>();

  constructor(
    readonly store: ConversationAddressStore,
    readonly registry: Registry,
    private readonly log: Logger,
    private readonly onError: (where: string) => void,
  ) {}

  /** The gateway handled a message of this conversation: its address is kept (written only when new or changed). Never throws. */
  seen(env: InboundEnvelope, bindingKey: string): void {
    if (env.change) return;
    const key = chatKeyOf(env.platform, env.botId, env.chatId, env.threadId);
    const template: AddressTemplate = {
      chatKind: env.chatKind,
      channel: env.channel,
      ...(env.chatTitle !== undefined && { chatTitle: env.chatTitle }),
      ...(env.workspace !== undefined && { workspace: env.workspace }),
      ...(env.chatKind === "private" && { senderId: env.senderId, ...(env.senderName !== undefined && { senderName: env.senderName }) }),
      replyTo: durableAddress(env.replyTo),
    };
    const text = codecs.conversationTemplate.encode(template);
    const value = digestOf(`${bindingKey}\n${text}`);
    if (this.#seen.get(key) === value) return;
    setBounded(this.#seen, key, value, SEEN_LIMIT);
    void this.store
      .upsert({
        key,
        platform: env.platform,
        botId: env.botId,
        chatId: env.chatId,
        // The id the platform's API takes (Slack's channel id beside "<team>/<channel>"): a caller may name the chat by it.
        replyChatId: template.replyTo.chatId,
        threadId: env.threadId ?? "",
        bindingKey,
        template: text,
      })
      .catch((err: unknown) => {
        this.#seen.delete(key);
        this.onError("conversation-address");
        this.log.error(
          { platform: env.platform, err: errInfo(err) },
          "could not record a conversation's address; the next message in it tries again (proactive messages cannot reach it meanwhile)",
        );
      });
  }

  /** The conversation a reference names, or why there is none (the answer names no other conversation). */
  async resolve(ref: ConversationRef): Promise<Resolution> {
    let rec: ConversationAddressRecord | undefined;
    if ("sessionId" in ref) {
      const s = await this.registry.store.find(ref.sessionId);
      if (!s || s.kind !== "chat") return { ok: false, status: 404, error: `no chat session ${ref.sessionId}: use an id from /status or GET /api/sessions` };
      rec = await this.store.byBinding(
        chatBinding({ agentId: bindingAgentIdOf(safeInfo(s) ?? { agentId: s.agentId }), userId: s.userId, groupId: s.groupId ?? undefined, channel: s.channel })
          .key,
      );
      if (!rec)
        return {
          ok: false,
          status: 404,
          error: `session ${ref.sessionId} has no known chat address yet: it gets one when the gateway handles a message there`,
        };
    } else {
      const found = await this.store.byChat(ref.platform, ref.chat, ref.thread ?? "", ref.bot);
      if (found.length === 0) return { ok: false, status: 404, error: notSeen(ref) };
      const bots = new Set(found.map((r) => r.botId));
      if (bots.size > 1)
        return {
          ok: false,
          status: 409,
          error: `several bots are in ${ref.platform} chat ${ref.chat}: name one with conversation.bot (${[...bots].slice(0, 5).join(", ")})`,
        };
      rec = found[0]!;
    }
    let template: AddressTemplate;
    try {
      template = codecs.conversationTemplate.decode(rec.template, rec.key);
    } catch (err) {
      this.onError("conversation-address-read");
      this.log.error({ key: rec.key, err: errInfo(err) }, "a conversation's recorded address could not be read");
      return { ok: false, status: 422, error: "this conversation's recorded address is unreadable; it is written again with the next message there" };
    }
    return {
      ok: true,
      conversation: {
        key: rec.key,
        platform: rec.platform as Platform,
        botId: rec.botId,
        chatId: rec.chatId,
        threadId: rec.threadId,
        bindingKey: rec.bindingKey,
        template,
      },
    };
  }

  /** The conversation's current session, if its binding exists. */
  async currentSession(c: ResolvedConversation): Promise<string | undefined> {
    return (await this.registry.store.findBinding(c.bindingKey))?.sessionId;
  }
}

const notSeen = (ref: ChatRef) => {
  const where = `${ref.platform} chat ${ref.chat}${ref.thread ? ` thread ${ref.thread}` : ""}${ref.bot ? ` with bot ${ref.bot}` : ""}`;
  return `no conversation ${where} is known: the bot can write only where it has been talked to (send it a message there first)`;
};
