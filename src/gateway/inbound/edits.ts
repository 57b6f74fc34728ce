import type { Logger } from "../../log.js";
import { renderUserText } from "../../runtime/pending.js";
import type { Runner } from "../../runtime/runner.js";
import type { InboundEnvelope } from "../contract.js";
import type { GatewayLedger } from "../ledger.js";

/**
 * An edited or deleted message: its transcript entry takes the new text
 * (marked edited) or is marked deleted, and the live windows that hold it
 * are dropped, so the model never sees the old text again. Never answered.
 * Access needs no check: only entries that came from this very message
 * change, and a sender who was never let in has none.
 */
export async function applyChange(
  deps: { runner: Runner; ledger: GatewayLedger; log: Logger; maxInboundChars: number },
  env: InboundEnvelope,
  change: NonNullable<InboundEnvelope["change"]>,
  inboundId: string,
): Promise<void> {
  const { runner, log } = deps;
  const sourceId = `${env.platform}:${env.botId}:${env.chatId}:${change.messageId}`;
  let sessions: string[] = [];
  if (change.kind === "delete") sessions = await runner.opts.transcript.applyChange(sourceId, { kind: "delete" });
  else if (env.text.length <= deps.maxInboundChars)
    sessions = await runner.opts.transcript.applyChange(sourceId, {
      kind: "edit",
      content: renderUserText({ text: env.text, attachments: env.attachments } as Parameters<typeof renderUserText>[0]),
    });
  else log.info({ platform: env.platform, inboundId }, "an edit longer than MAX_INBOUND_CHARS was not applied; the transcript keeps the earlier text");
  for (const id of sessions) if (runner.has(id)) runner.get(id).invalidateWindow();
  await deps.ledger.commit({ sessionId: sessions[0] ?? "", inboundIds: [inboundId], messages: [], turnIncrement: 0, replies: [] });
}
