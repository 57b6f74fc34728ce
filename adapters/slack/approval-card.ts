/**
 * Approval cards on Slack: Block Kit (a section, the arguments in a code
 * block, a context line with the status, and an actions block of three
 * buttons whose action_id is `approval:<action>:<id>`). A press arrives as a
 * `block_actions` interaction, on POST /slack/interactions (signed, like the
 * events) or as a Socket Mode `interactive` envelope; Bolt's action listener
 * acks it at once (Slack wants that within 3 s) and the request is answered
 * then; after it, detached from the answer (SlackAdapter.stop waits for it),
 * the decision is made and a refusal is posted as an ephemeral message only
 * the presser sees. Once decided, the card is updated in place without its
 * buttons.
 *
 * Every string in a mrkdwn-parsed field (the `text` fallback, section and
 * context text, the presser's ephemeral answer) is escaped (&, <, > as
 * &amp; &lt; &gt;), so a tool's arguments or a user's name can never form
 * `<!channel>`, a mention or a labelled link. The arguments are shown whole
 * in a code block (a run of three backticks gets a zero-width space inside
 * it): in the card when they fit a section's 3000 characters, else in
 * numbered parts posted before the card, which then points up to them.
 */
import type { App } from "@slack/bolt";
import { argumentsLine, BUTTONS, cardText, cardTitle, decodeAction, HEADING_ROOM, layoutArguments, partHeading, statusLine, type Weight } from "../types.js";
import type { Logger } from "../../src/log.js";
import { AdapterError, type AdapterContext, type ApprovalCard, type ReplyAddress, type SentMessage } from "../types.js";
import { toAdapterError } from "./errors.js";
import { escapeSlackMrkdwn } from "./format.js";
import { decodeReplyAddress } from "./ids.js";
import { SLACK_LIMITS } from "./limits.js";
import type { SlackIdentity } from "./normalize.js";

export const INTERACTIONS_PATH = "/slack/interactions";

/** The Web API calls the cards make. */
export interface SlackCardClient {
  chat: {
    postMessage(args: Record<string, unknown>): Promise<{ ts?: string }>;
    update(args: Record<string, unknown>): Promise<unknown>;
    postEphemeral(args: { channel: string; user: string; text: string; thread_ts?: string }): Promise<unknown>;
  };
}

/** Slack refuses a section whose text is longer (invalid_blocks). */
export const SECTION_MAX = 3000;
const FENCE = 8; // "```\n" and "\n```"

const esc = escapeSlackMrkdwn;
/** Escaped, in a code block no argument text can close. */
const fenced = (s: string) => `\`\`\`\n${esc(s).replace(/``(?=`)/g, "``\u200b")}\n\`\`\``;
/** What one character of the arguments takes once escaped and fenced. */
const weight: Weight = (ch) => (ch === "&" ? 5 : ch === "<" || ch === ">" ? 4 : ch === "`" ? 2 : ch.length);

/** The card's arguments: in its section, or (parts) in the messages before it. Same answer when shown and when edited. */
function layout(card: ApprovalCard) {
  const fixed = argumentsLine({ ...card, argumentsAbove: 1 }).length + 1 + FENCE;
  return layoutArguments(card.arguments, { card: SECTION_MAX - fixed, part: SLACK_LIMITS.maxTextLength - HEADING_ROOM - FENCE }, weight);
}

export function cardBlocks(card: ApprovalCard, above = layout(card).length): unknown[] {
  const c = above ? { ...card, argumentsAbove: above } : card;
  const args = above ? esc(argumentsLine(c)) : `${esc(argumentsLine(c))}\n${fenced(card.arguments)}`;
  const blocks: unknown[] = [
    { type: "section", text: { type: "mrkdwn", text: `*${esc(cardTitle(c))}*` } },
    { type: "section", text: { type: "mrkdwn", text: args } },
    { type: "context", elements: [{ type: "mrkdwn", text: esc(statusLine(c)) }] },
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

/** `text`, the notification and screen-reader fallback of the blocks: mrkdwn-parsed too, so escaped. */
function fallback(card: ApprovalCard, above: number): string {
  return esc(cardText(above ? { ...card, argumentsAbove: above } : card));
}

function target(to: ReplyAddress) {
  const t = decodeReplyAddress(to);
  if ("error" in t) throw new AdapterError("slack", "Rejected", t.error);
  return t;
}

/** How many parts of arguments go before the card (the outbound door sends each, then the card). */
export function slackCardParts(card: ApprovalCard): number {
  return layout(card).length;
}

/** Part `index` of the arguments, before the card: Approve is offered only once all of them are in the chat. */
export async function sendSlackCardPart(client: SlackCardClient, to: ReplyAddress, card: ApprovalCard, index: number): Promise<SentMessage> {
  const t = target(to);
  const parts = layout(card);
  const p = parts[index];
  if (!p) throw new AdapterError("slack", "Rejected", `the card has ${parts.length} parts of arguments, not part ${index + 1}`);
  return post(client, { channel: t.channel, text: `${esc(partHeading(card, index, parts))}\n${fenced(p.text)}`, ...threadOf(t) });
}

/** The card with its buttons, pointing up to the parts posted before it. */
export async function sendSlackCard(client: SlackCardClient, to: ReplyAddress, card: ApprovalCard): Promise<SentMessage> {
  const t = target(to);
  const above = layout(card).length;
  return post(client, { channel: t.channel, text: fallback(card, above), blocks: cardBlocks(card, above), ...threadOf(t) });
}

function threadOf(t: { thread_ts?: string }): { thread_ts?: string } {
  return t.thread_ts !== undefined ? { thread_ts: t.thread_ts } : {};
}

async function post(client: SlackCardClient, args: Record<string, unknown>): Promise<SentMessage> {
  let res: { ts?: string };
  try {
    res = await client.chat.postMessage(args);
  } catch (err) {
    throw toAdapterError(err, "chat.postMessage");
  }
  if (typeof res.ts !== "string") throw new AdapterError("slack", "Transient", "Slack chat.postMessage answered without a message ts");
  return { messageId: res.ts };
}

export async function editSlackCard(client: SlackCardClient, to: ReplyAddress, messageId: string, card: ApprovalCard): Promise<void> {
  const t = target(to);
  const above = layout(card).length;
  try {
    await client.chat.update({ channel: t.channel, ts: messageId, text: fallback(card, above), blocks: cardBlocks(card, above) });
  } catch (err) {
    throw toAdapterError(err, "chat.update");
  }
}

/** A press, as the action's body names it. */
interface Press extends NonNullable<ReturnType<typeof decodeAction>> {
  channel: string;
  user: string;
  name: string | undefined;
  threadTs: string | undefined;
}

function readPress(action: unknown, body: unknown): Press | undefined {
  const a = action as { action_id?: string };
  const b = body as { user?: { id?: string; name?: string; username?: string }; channel?: { id?: string }; message?: { thread_ts?: string } };
  const decoded = a.action_id ? decodeAction(a.action_id) : undefined;
  const channel = b.channel?.id;
  const user = b.user?.id;
  if (!decoded || !channel || !user) return undefined;
  return { id: decoded.id, action: decoded.action, channel, user, name: b.user?.name ?? b.user?.username, threadTs: b.message?.thread_ts };
}

/** Presses acked but still being decided: what stop() waits for. */
export interface PendingPresses {
  /** Resolves once every press taken so far (and any taken meanwhile) is decided and answered. */
  settled(): Promise<void>;
}

/**
 * Listens for presses of approval buttons, in HTTP and Socket Mode alike (Bolt routes both to app.action).
 * The ack goes first and alone: the decision (whose card edit waits on the chat's outbound lane) and the
 * presser's answer (chat.postEphemeral) run after it, so a slow Slack or a lane held by a 429 never makes
 * the press's answer late (Slack shows the presser a failure then, and does not retry an interaction).
 */
export function listenForApprovals(app: App, ctx: AdapterContext, identify: (context: Record<string, unknown>) => SlackIdentity, log: Logger): PendingPresses {
  const pending = new Set<Promise<void>>();
  app.action(/^approval:/, async ({ ack, body, action, client, context }) => {
    await ack();
    const press = readPress(action, body);
    if (!press) return;
    const work = decideAndTell(press, ctx, () => identify(context), client as unknown as SlackCardClient, log).catch((err) => {
      ctx.reportError?.("slack-approval", err);
      log.error(
        { approvalId: press.id, channel: press.channel, err: err instanceof Error ? err.message : String(err) },
        "slack: an acked approval click failed",
      );
    });
    pending.add(work);
    void work.finally(() => pending.delete(work));
  });
  return {
    async settled() {
      while (pending.size > 0) await Promise.allSettled([...pending]);
    },
  };
}

/** Makes the decision, then tells the presser alone the outcome (the card itself shows a decision). */
async function decideAndTell(press: Press, ctx: AdapterContext, identify: () => SlackIdentity, client: SlackCardClient, log: Logger): Promise<void> {
  let r: { ok: boolean; text: string };
  try {
    const me = identify();
    r = (await ctx.approvalClick?.({
      id: press.id,
      action: press.action,
      chatId: press.channel,
      senderId: press.user,
      botId: me.botUserId,
      ...(me.installerUserId !== undefined && press.user === me.installerUserId && { senderAdministers: true }),
      ...(press.name && { senderName: press.name }),
    })) ?? { ok: false, text: "Approvals are not enabled here." };
  } catch (err) {
    ctx.reportError?.("slack-approval", err);
    log.error({ approvalId: press.id, err: err instanceof Error ? err.message : String(err) }, "slack: an approval click could not be handled");
    r = { ok: false, text: "That could not be recorded; please try again." };
  }
  try {
    // The answer names people (who asked, who decided): escaped like every mrkdwn text.
    await client.chat.postEphemeral({ channel: press.channel, user: press.user, text: esc(r.text), ...(press.threadTs && { thread_ts: press.threadTs }) });
  } catch (err) {
    log.warn({ approvalId: press.id, err: toAdapterError(err, "chat.postEphemeral").message }, "slack: telling the presser the outcome failed");
  }
}
