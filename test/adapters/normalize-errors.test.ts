/**
 * The normalizers never throw, but an event they could not read must not
 * vanish silently either: each reports the error (the adapters log it and
 * count it in switchboard_internal_errors_total{where}).
 */
import { describe, expect, it } from "vitest";
import { normalizeUpdate } from "../../adapters/telegram/normalize.js";
import { normalizeMessage } from "../../adapters/discord/normalize.js";
import { normalizeInteraction } from "../../adapters/discord/commands.js";
import { normalizeEvent } from "../../adapters/slack/normalize.js";

/** A payload whose first field read throws, as a hostile getter or a proxy would. */
function hostile(field: string): Record<string, unknown> {
  return new Proxy({} as Record<string, unknown>, {
    get: (_t, k) => {
      if (k === field || k === "data" || k === "type" || k === "event" || k === "message" || k === "id") throw new Error(`unreadable ${String(k)}`);
      return undefined;
    },
    has: () => true,
    ownKeys: () => [field],
    getOwnPropertyDescriptor: () => ({ configurable: true, enumerable: true, value: undefined }),
  });
}

describe("normalizers report what they could not read", () => {
  it("telegram", () => {
    const errors: unknown[] = [];
    expect(normalizeUpdate(hostile("message"), { id: 1, username: "bot" } as never, (e) => errors.push(e))).toBeUndefined();
    expect(errors).toHaveLength(1);
    expect(String(errors[0])).toContain("unreadable");
  });

  it("discord message and interaction", () => {
    const errors: unknown[] = [];
    const bot = { id: "100000000000000001", username: "bot" } as never;
    expect(normalizeMessage(hostile("id"), bot, undefined, (e) => errors.push(e))).toBeUndefined();
    expect(normalizeInteraction(hostile("id"), bot, undefined, (e) => errors.push(e))).toBeUndefined();
    expect(errors).toHaveLength(2);
  });

  it("slack", () => {
    const errors: unknown[] = [];
    expect(normalizeEvent(hostile("event"), { teamId: "T1", botUserId: "U1" }, { onError: (e) => errors.push(e) })).toBeUndefined();
    expect(errors).toHaveLength(1);
  });
});
