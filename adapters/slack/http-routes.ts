import type { AdapterContext } from "../types.js";
import { INTERACTIONS_PATH } from "./approval-card.js";
import type { SlackHttpReceiver } from "./receiver.js";
import { signatureHeadersPresent } from "./signature.js";

/** Events API paths on the gateway's server. */
export const EVENTS_PATH = "/slack/events";
export const COMMANDS_PATH = "/slack/commands";
/** Slack's payloads are a few KB; 1 MB leaves room and bounds what an unsigned sender can make us hold. */
export const MAX_BODY_BYTES = 1024 * 1024;

/** HTTP mode's routes on the gateway's server: events, commands and interactivity, all signed by Slack. */
export function mountRoutes(ctx: AdapterContext, receiver: SlackHttpReceiver): void {
  // Public (Slack signs each request); the signature headers are checked before the body is read.
  const route = {
    public: true,
    maxBodyBytes: MAX_BODY_BYTES,
    precheck: (req: { headers: Record<string, string | string[] | undefined> }) =>
      signatureHeadersPresent(req.headers) ? undefined : { status: 401, body: "invalid signature" },
  };
  ctx.route("POST", EVENTS_PATH, receiver.handle, route);
  ctx.route("POST", COMMANDS_PATH, receiver.handle, route);
  // Interactivity (button presses): the Request URL under Interactivity & Shortcuts in the app's settings.
  ctx.route("POST", INTERACTIONS_PATH, receiver.handle, route);
}
