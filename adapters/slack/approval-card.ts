/**
 * Approval cards on Slack: Block Kit (a section, the arguments in a code
 * block, a context line with the status, and an actions block of three
 * buttons whose action_id is `approval:<action>:<id>`). A press arrives as a
 * `block_actions` interaction, on POST /slack/interactions (signed, like the
 * events) or as a Socket Mode `interactive` envelope; Bolt's action listener
 * acks it at once (Slack wants that within 3 s), then the decision is made and
 * a refusal is posted as an ephemeral message only the presser sees. Once
 * decided, the card is updated in place without its buttons.
 */
import type { App } from "@slack/bolt";
import { BUTTONS, cardText, cardTitle, decodeAction, statusLine } from "../types.js";
import type { Logger } from "../../src/log.js";
import { AdapterError, type AdapterContext, type ApprovalCard, type ReplyAddress, type SentMessage } from "../types.js";
import { toAdapterError } from "./errors.js";
import { escapeSlackMrkdwn } from "./format.js";
import { decodeReplyAddress } from "./ids.js";

export const INTERACTIONS_PATH = "/slack/interactions";

/** The Web API calls the cards make. */
export interface SlackCardClient {
  chat: {
    postMessage(args: Record<string, unknown>): Promise<{ ts?: string }>;
    update(args: Record<string, unknown>): Promise<unknown>;
    postEphemeral(args: { channel: string; user: string; text: string; thread_ts?: string }): Promise<unknown>;
  };
}

export function cardBlocks(card: ApprovalCard): unknown[] {
  // Triple backticks inside the arguments would end the code block early.
  const args = escapeSlackMrkdwn(card.arguments).replace(/```/g, "` ` `");
  const blocks: unknown[] = [
    { type: "section", text: { type: "mrkdwn", text: `*${escapeSlackMrkdwn(cardTitle(card))}*` } },
    { type: "section", text: { type: "mrkdwn", text: `\`\`\`${args}\`\`\`` } },
    { type: "context", elements: [{ type: "mrkdwn", text: escapeSlackMrkdwn(statusLine(card)) }] },
  ];
  if (card.state === "pending") {
    blocks.push({
      type: "actions",
      block_id: `approval-${card.id}`,
      elements: BUTTONS.map((b) => ({
        type: "button",
        action_id: `approval:${b.action}:${card.id}`,
        value: card.id,
        text: { type: "plain_text", text: b.label },
        ...(b.action === "approve" && { style: "primary" }),
        ...(b.action === "deny" && { style: "danger" }),
      })),
    });
  }
  return blocks;
}

function target(to: ReplyAddress) {
  const t = decodeReplyAddress(to);
  if ("error" in t) throw new AdapterError("slack", "Rejected", t.error);
  return t;
}

export async function sendSlackCard(client: SlackCardClient, to: ReplyAddress, card: ApprovalCard): Promise<SentMessage> {
  const t = target(to);
  let res: { ts?: string };
  try {
    // `text` is the notification and screen-reader fallback of the blocks.
    res = await client.chat.postMessage({
      channel: t.channel,
      text: cardText(card),
      blocks: cardBlocks(card),
      ...(t.thread_ts !== undefined && { thread_ts: t.thread_ts }),
    });
  } catch (err) {
    throw toAdapterError(err, "chat.postMessage");
  }
  if (typeof res.ts !== "string") throw new AdapterError("slack", "Transient", "Slack chat.postMessage answered without a message ts");
  return { messageId: res.ts };
}

export async function editSlackCard(client: SlackCardClient, to: ReplyAddress, messageId: string, card: ApprovalCard): Promise<void> {
  const t = target(to);
  try {
    await client.chat.update({ channel: t.channel, ts: messageId, text: cardText(card), blocks: cardBlocks(card) });
  } catch (err) {
    throw toAdapterError(err, "chat.update");
  }
}

/** Listens for presses of approval buttons, in HTTP and Socket Mode alike (Bolt routes both to app.action). */
export function listenForApprovals(app: App, ctx: AdapterContext, client: () => SlackCardClient | undefined, log: Logger): void {
  app.action(/^approval:/, async ({ ack, body, action }) => {
    await ack();
    const a = action as { action_id?: string };
    const b = body as { user?: { id?: string; name?: string; username?: string }; channel?: { id?: string }; message?: { thread_ts?: string } };
    const decoded = a.action_id ? decodeAction(a.action_id) : undefined;
    const channel = b.channel?.id;
    const user = b.user?.id;
    if (!decoded || !channel || !user) return;
    let r: { ok: boolean; text: string };
    try {
      const name = b.user?.name ?? b.user?.username;
      r = (await ctx.approvalClick?.({ id: decoded.id, action: decoded.action, chatId: channel, senderId: user, ...(name && { senderName: name }) })) ?? {
        ok: false,
        text: "Approvals are not enabled here.",
      };
    } catch (err) {
      ctx.reportError?.("slack-approval", err);
      log.error({ err: err instanceof Error ? err.message : String(err) }, "slack: an approval click could not be handled");
      r = { ok: false, text: "That could not be recorded; please try again." };
    }
    // The card itself shows a decision; the presser alone is told the rest.
    try {
      await client()?.chat.postEphemeral({ channel, user, text: r.text, ...(b.message?.thread_ts && { thread_ts: b.message.thread_ts }) });
    } catch (err) {
      log.warn({ err: toAdapterError(err, "chat.postEphemeral").message }, "slack: telling the presser the outcome failed");
    }
  });
}
