import type { AdapterSink, InboundEnvelope, ReplyAddress } from "../../adapters/types.js";
import { MemoryAdapter } from "../../test/support/memory-adapter.js";
import { unlimited } from "./unlimited.mjs";

/**
 * The tests' in-process platform (test/support/memory-adapter.ts) for the
 * core scenarios: a sink that only counts and reports each send to `onSend`
 * (it keeps nothing, so a long run holds no list of replies), and limits so
 * high that pacing never bounds the gateway.
 */
export class BenchAdapter extends MemoryAdapter {
  override botUsername = "benchbot";
  sends = 0;
  onSend: (to: ReplyAddress, text: string) => void = () => {};
  #ids = 0;

  constructor(botId = "777") {
    super(botId);
    unlimited(this);
  }

  override sink: AdapterSink = {
    send: async (to, text) => {
      this.sends++;
      this.onSend(to, text);
      return { messageId: String(++this.#ids) };
    },
    edit: async () => {},
    typing: async () => {},
  };

  /** A message from `senderId` in chat `chatId` (a DM when they are equal), with the platform's message id `eventId`. */
  envelope(chatId: string, senderId: string, group: boolean, text: string, eventId: string): InboundEnvelope {
    const ids = { eventId, messageId: eventId };
    return group ? this.group(chatId, senderId, text, ids) : this.dm(senderId, text, ids);
  }
}
