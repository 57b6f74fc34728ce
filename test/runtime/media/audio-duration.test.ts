/**
 * A voice note's duration (the platform's `durationSec`) reaches the transcriber, which the meter charges a perMinute
 * price for; a transcription a budget refused tells the user the budget's line (what to do), not "try again".
 */
import { expect, it } from "vitest";
import type { AudioInput } from "../../../src/agent/transcribe.js";
import { AgentError } from "../../../src/agent/types.js";
import type { MessageEvent } from "../../../src/runtime/events.js";
import { mediaPreparer } from "../../../src/runtime/media/input.js";
import type { FileSource } from "../../../src/runtime/media/types.js";

const OGG = Buffer.concat([Buffer.from("OggS\0\x02", "binary"), Buffer.alloc(32)]);
const voice = (durationSec?: number): MessageEvent =>
  ({
    type: "message",
    text: "",
    attachments: [{ kind: "voice", fileId: "v", ...(durationSec !== undefined && { durationSec }) }],
    respond: true,
    origin: { platform: "telegram", chatId: "1", senderId: "1" },
    replyTo: { platform: "telegram", botId: "b", chatId: "1" },
    conversation: { agentId: "b", userId: "u", channel: "c" },
    receivedAt: new Date(),
  }) as MessageEvent;
const source: FileSource = { locate: async () => ({ url: "https://files.test/v", allowedHosts: ["files.test"], label: "file v" }) };
const base = {
  vision: false,
  maxImageBytes: 1024,
  maxAudioBytes: 1024,
  timeoutMs: 5_000,
  files: () => source,
  fetch: (async () => new Response(new Uint8Array(OGG))) as typeof fetch,
};
const signal = new AbortController().signal;

it("the voice note's durationSec is passed to the transcriber; none when the platform gave none", async () => {
  const seen: AudioInput[] = [];
  const prep = mediaPreparer({
    ...base,
    transcribe: async (a) => {
      seen.push(a);
      return "hello";
    },
  });
  await prep(voice(42), signal);
  await prep(voice(), signal);
  expect(seen.map((a) => a.durationSec)).toEqual([42, undefined]);
  expect("durationSec" in seen[1]!).toBe(false);
});

it("a transcription refused by the meter gives the user the refusal's line", async () => {
  const line = 'The model "whisper-9" has no price, so your daily cost budget (1.00) cannot count it, and nothing was sent to it.';
  const prep = mediaPreparer({
    ...base,
    transcribe: async () => {
      throw new AgentError("Budget", line);
    },
  });
  const r = await prep(voice(3), signal);
  expect(r.notices.map((n) => n.text)).toEqual([`I couldn't transcribe that voice note: ${line}`]);
});
