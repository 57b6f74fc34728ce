/**
 * The one file under src/ that calls an AdapterSink method (test/boundary.test.ts
 * holds it to that). Each function here is what one platform call does; the
 * door (outbound.ts) runs every one of them inside the adapter's
 * OutboundScheduler, which paces, orders and retries them. Everything else
 * reaches a platform by enqueueing an item on the door.
 */
import type { ReplyAddress, Severity } from "../../runtime/events.js";
import { cardText, plainCard, type ApprovalCard } from "../../runtime/approvals/card.js";
import type { Adapter } from "../adapter.js";
import type { SentMessage } from "../contract.js";
import { isAdapterError } from "../contract.js";
import { chunkText } from "../format/chunk-text.js";
import type { ChatLane } from "./scheduler.js";

/**
 * Sends one rendered chunk. A refusal of the text itself never loses it: a
 * chunk refused as too long is split smaller and each piece sent (a few
 * rounds at most), one refused for its formatting is sent as plain text.
 * Only the first piece quotes the user's message. Returns the first piece's
 * message.
 */
export interface ChunkOptions {
  onRefused?: (why: "too-long" | "bad-format") => void;
  /** A notice's severity, passed on to the sink (the console styles it). */
  severity?: Severity;
  /** Rounds of splitting so far, and whether the pieces are plain text (internal). */
  depth?: number;
  plain?: boolean;
}

export async function sendChunk(adapter: Adapter, to: ReplyAddress, chunk: string, key: string, opts: ChunkOptions = {}): Promise<SentMessage> {
  const { onRefused, severity, depth = 0 } = opts;
  let plain = opts.plain ?? false;
  const extra = { ...(severity && { severity }) };
  try {
    return await adapter.sink.send(to, chunk, { idempotencyKey: key, ...(plain && { plain }), ...extra });
  } catch (err) {
    const format = adapter.format;
    if (!format || !isAdapterError(err, "Rejected") || err.reason === undefined) throw err;
    onRefused?.(err.reason);
    if (err.reason === "bad-format" && !plain) return adapter.sink.send(to, format.plain(chunk), { idempotencyKey: `${key}p`, plain: true, ...extra });
    if (err.reason !== "too-long" || depth >= 3) throw err;
    const half = Math.max(1, Math.floor(chunk.length / 2));
    let pieces: string[] = [];
    try {
      if (!plain) pieces = format.split(chunk, half);
    } catch {
      // A tag longer than half the chunk cannot be split as rendered: the plain text can.
    }
    if (pieces.length < 2) {
      pieces = chunkText(plain ? chunk : format.plain(chunk), half);
      plain = true;
    }
    let first: SentMessage | undefined;
    for (const [j, piece] of pieces.entries()) {
      const sent = await sendChunk(adapter, j === 0 ? to : { ...to, replyToMessageId: undefined }, piece, `${key}.${j}`, { ...opts, depth: depth + 1, plain });
      first ??= sent;
    }
    if (!first) throw err;
    return first;
  }
}

/** Edits a message to a rendered chunk; one the platform cannot parse is written as plain text instead. */
export async function editChunk(adapter: Adapter, to: ReplyAddress, messageId: string, chunk: string): Promise<void> {
  try {
    await adapter.sink.edit(to, messageId, chunk);
  } catch (err) {
    if (!adapter.format || !isAdapterError(err, "Rejected") || err.reason !== "bad-format") throw err;
    await adapter.sink.edit(to, messageId, adapter.format.plain(chunk), { plain: true });
  }
}

/** A streamed draft's first post and its edits: best effort, sent as rendered. */
export const postDraft = (adapter: Adapter, to: ReplyAddress, text: string): Promise<SentMessage> => adapter.sink.send(to, text);
export const editDraft = (adapter: Adapter, to: ReplyAddress, messageId: string, text: string): Promise<void> => adapter.sink.edit(to, messageId, text);

/** A line that needs no rendering (the gateway's own fixed texts), sent as it is. */
export const sendLine = (adapter: Adapter, to: ReplyAddress, text: string, opts: { idempotencyKey?: string; severity?: Severity } = {}): Promise<SentMessage> =>
  adapter.sink.send(to, text, { ...opts, plain: true });

export const sendTyping = (adapter: Adapter, to: ReplyAddress): Promise<void> => adapter.sink.typing(to);

/** Whether the platform can show what the bot already posted (AdapterSink.findSent). */
export const canReadBack = (adapter: Adapter): boolean => adapter.sink.findSent !== undefined;

/** Of the reply chunks named by `keys`, the ones the chat already shows (empty where the platform cannot tell). */
export async function findSent(adapter: Adapter, to: ReplyAddress, keys: readonly string[], since: Date): Promise<Map<string, SentMessage>> {
  return adapter.sink.findSent ? adapter.sink.findSent(to, keys, since) : new Map();
}

export const canLeave = (adapter: Adapter): boolean => adapter.sink.leave !== undefined;

/** Clears the platform's wait for a reply that will not come (AdapterSink.unanswered); nothing where it shows none. */
export async function clearWait(adapter: Adapter, to: ReplyAddress): Promise<void> {
  await adapter.sink.unanswered?.(to);
}

/** The bot leaves a group (AdapterSink.leave); false where the platform's adapter cannot. */
export async function leaveChat(adapter: Adapter, chatId: string): Promise<boolean> {
  if (!adapter.sink.leave) return false;
  await adapter.sink.leave(chatId);
  return true;
}

/**
 * Shows an approval card, holding the chat: with the platform's buttons
 * where the sink draws cards, else as text, the argument parts first (when
 * the card cannot hold them) and then the card. Each message is its own
 * call, so a 429 on one retries that one, never the parts already shown.
 */
export async function showCard(lane: ChatLane, adapter: Adapter, to: ReplyAddress, card: ApprovalCard): Promise<string> {
  const { sink, limits } = adapter;
  if (sink.sendCard) {
    const sendCard = sink.sendCard.bind(sink);
    const sendPart = sink.sendCardPart?.bind(sink);
    const parts = sendPart ? (sink.cardParts?.(card) ?? 0) : 0;
    for (let i = 0; i < parts; i++) await lane.call(() => sendPart!(to, card, i), { label: "card-part" });
    return (await lane.call(() => sendCard(to, card), { label: "card" })).messageId;
  }
  const shown = plainCard(card, limits.maxTextLength);
  for (const part of shown.parts) await lane.call(() => sink.send(to, part, { plain: true }), { label: "card-part" });
  return (await lane.call(() => sink.send(to, cardText(shown.card, { fallback: true }), { plain: true }), { label: "card" })).messageId;
}

/** Redraws a decided card in place (its buttons gone), or its text form. */
export async function editCard(lane: ChatLane, adapter: Adapter, to: ReplyAddress, messageId: string, card: ApprovalCard): Promise<void> {
  const { sink, limits } = adapter;
  if (sink.editCard) {
    const edit = sink.editCard.bind(sink);
    return lane.call(() => edit(to, messageId, card), { label: "card-edit" });
  }
  await lane.call(() => sink.edit(to, messageId, cardText(plainCard(card, limits.maxTextLength).card), { plain: true }), { label: "card-edit" });
}
