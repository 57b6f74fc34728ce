import { createHash } from "node:crypto";

/** Process-wide, as the registered tracer provider is: set by startTelemetry, cleared by its shutdown. */
let on = false;
let capture = false;

export function setTracing(enabled: boolean, captureMessageContent: boolean): void {
  on = enabled;
  capture = enabled && captureMessageContent;
}

/** Spans are being recorded (a provider is registered by this module). */
export function tracing(): boolean {
  return on;
}

/**
 * OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true: spans may carry
 * message text, prompts, tool arguments and results. Otherwise they carry
 * none of it, only sizes and counts.
 */
export function captureContent(): boolean {
  return capture;
}

/**
 * A chat or user id as spans show it: the first 16 hex digits of its SHA-256,
 * so one person's spans can be found together without the trace naming them.
 */
export function hashId(id: string | undefined): string | undefined {
  return id === undefined ? undefined : createHash("sha256").update(id).digest("hex").slice(0, 16);
}
