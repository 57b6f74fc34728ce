/**
 * A transcription's usage: what the server's answer says it used (OpenAI's `usage`, seconds or tokens; verbose_json's
 * `duration`), and what the metered transcriber reserves and settles with (the platform's duration, the server's
 * seconds first). The server is an injected fetch; the meter a recording fake.
 */
import { describe, expect, it } from "vitest";
import { meteredTranscriber } from "../../src/agent/metered.js";
import type { ModelCall, ModelMeter, ModelUsage } from "../../src/agent/model-meter.js";
import { transcriber, type AudioInput, type Transcription } from "../../src/agent/transcribe.js";

const audio = (durationSec?: number): AudioInput => ({
  data: Buffer.from("OggS"),
  mimeType: "audio/ogg",
  fileName: "voice.ogg",
  ...(durationSec !== undefined && { durationSec }),
});

const answering = (body: unknown) =>
  transcriber({
    baseUrl: "http://transcribe.invalid/v1",
    model: "whisper-1",
    fetch: async () => new Response(JSON.stringify(body), { status: 200, headers: { "content-type": "application/json" } }),
  });

describe("the transcription server's answer", () => {
  it("gives the text, and the seconds or tokens it says it used; nothing it does not say", async () => {
    const signal = new AbortController().signal;
    expect(await answering({ text: " hi ", usage: { type: "duration", seconds: 9 } })(audio(), signal)).toEqual({ text: "hi", seconds: 9 });
    expect(await answering({ text: "hi", duration: 4.5 })(audio(), signal)).toEqual({ text: "hi", seconds: 4.5 });
    expect(await answering({ text: "hi", usage: { type: "tokens", input_tokens: 50, output_tokens: 3, total_tokens: 53 } })(audio(), signal)).toEqual({
      text: "hi",
      tokens: { input: 50, output: 3 },
    });
    expect(await answering({ text: "hi" })(audio(), signal)).toEqual({ text: "hi" });
    expect(await answering({ text: "hi", usage: null, duration: "long" })(audio(), signal)).toEqual({ text: "hi" });
    expect(await answering({ text: "hi", usage: { type: "duration", seconds: -1 } })(audio(), signal)).toEqual({ text: "hi" });
  });
});

function recordingMeter() {
  const calls: ModelCall[] = [];
  const settled: ModelUsage[] = [];
  let released = 0;
  const meter: ModelMeter = {
    reserve: async (call) => {
      calls.push(call);
      return {
        settle: async (u) => void settled.push(u),
        release: async () => void released++,
      };
    },
  };
  return { meter, calls, settled, released: () => released };
}

describe("the metered transcriber", () => {
  const signal = new AbortController().signal;
  const server = (t: Transcription) => async () => t;

  it("reserves the platform's duration and settles with it when the server says none", async () => {
    const m = recordingMeter();
    const text = await meteredTranscriber(server({ text: "buy milk" }), "whisper-1", m.meter)(audio(120), signal);
    expect(text).toBe("buy milk");
    expect(m.calls).toEqual([{ kind: "transcription", model: "whisper-1", maxTokens: 0, audioSeconds: 120 }]);
    expect(m.settled).toHaveLength(1);
    expect(m.settled[0]).toMatchObject({ model: "whisper-1", promptTokens: 0, estimated: true, audioSeconds: 120 });
    expect(m.settled[0]!.completionTokens).toBeGreaterThan(0);
  });

  it("settles with the server's seconds (what it bills) over the platform's, and with its tokens when it gives them", async () => {
    const m = recordingMeter();
    await meteredTranscriber(server({ text: "a", seconds: 121.4 }), "whisper-1", m.meter)(audio(121), signal);
    await meteredTranscriber(server({ text: "b", tokens: { input: 40, output: 2 } }), "gpt-4o-transcribe", m.meter)(audio(), signal);
    expect(m.calls[1]).toEqual({ kind: "transcription", model: "gpt-4o-transcribe", maxTokens: 0 });
    expect(m.settled[0]).toMatchObject({ audioSeconds: 121.4 });
    expect(m.settled[1]).toMatchObject({ promptTokens: 40, completionTokens: 2, estimated: false });
    expect(m.settled[1]!.audioSeconds).toBeUndefined();
  });

  it("releases a request that failed, and without a meter gives the text alone", async () => {
    const m = recordingMeter();
    const failing = async (): Promise<Transcription> => {
      throw new Error("down");
    };
    await expect(meteredTranscriber(failing, "whisper-1", m.meter)(audio(5), signal)).rejects.toThrow("down");
    expect(m.released()).toBe(1);
    expect(m.settled).toEqual([]);
    expect(await meteredTranscriber(server({ text: "plain", seconds: 3 }), "whisper-1", undefined)(audio(), signal)).toBe("plain");
  });
});
