/**
 * normalizeEvent under fuzz: 10,000 arbitrary and near-valid events. Slow
 * tier: generating them takes seconds (the hand-written cases are in
 * normalize.test.ts).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { normalizeEvent, type SlackIdentity } from "../../../adapters/slack/normalize.js";
import { FakeSlack } from "../../fakes/slack.js";

const sl = new FakeSlack();
const me: SlackIdentity = { teamId: sl.identity.teamId, botUserId: sl.identity.botUserId, botId: sl.identity.botId };
const BOT = `<@${me.botUserId}>`;

describe("normalizeEvent", () => {
  it("fuzz: 10,000 arbitrary and near-valid events never throw", () => {
    const near = fc.record(
      {
        type: fc.constantFrom("message", "app_mention", "reaction_added", 5, null),
        subtype: fc.option(fc.constantFrom("file_share", "thread_broadcast", "bot_message", "message_changed", "x"), { nil: undefined }),
        channel: fc.oneof(fc.constantFrom("C0GEN", "D0DM", "G0X", ""), fc.anything()),
        channel_type: fc.oneof(fc.constantFrom("im", "channel", "group", "mpim", "app_home"), fc.anything()),
        user: fc.oneof(fc.constantFrom("U0BOB", me.botUserId), fc.anything()),
        bot_id: fc.oneof(fc.constant(undefined), fc.constantFrom(me.botId, "B0X"), fc.anything()),
        text: fc.oneof(fc.string(), fc.constant(`${BOT} hi`), fc.constant(`<@${me.botUserId}|bot> hi`), fc.anything()),
        ts: fc.oneof(fc.constantFrom("1700000000.000100", "9999999999999.1"), fc.string(), fc.anything()),
        thread_ts: fc.oneof(fc.constant(undefined), fc.constantFrom("1700000000.000100", "1700000000.000200"), fc.anything()),
        files: fc.oneof(
          fc.constant(undefined),
          fc.array(fc.anything()),
          fc.array(fc.record({ id: fc.string(), mimetype: fc.anything(), size: fc.anything() })),
          fc.anything(),
        ),
        user_profile: fc.anything(),
        hidden: fc.anything(),
      },
      { requiredKeys: [] },
    );
    const body = fc.oneof(
      fc.anything(),
      near,
      near.map((event) => ({ type: "event_callback", team_id: "T0FAKE001", event_id: "Ev1", event })),
    );
    let throws = 0;
    let produced = 0;
    fc.assert(
      fc.property(body, fc.boolean(), (b, known) => {
        try {
          const env = normalizeEvent(b, me, { knownThread: known });
          if (env) {
            produced++;
            JSON.stringify(env);
          }
        } catch {
          throws++;
        }
      }),
      // A fixed seed: valid envelopes are rare among random bodies, and the test must reach them every run.
      { numRuns: 10_000, seed: 20261129 },
    );
    expect(throws).toBe(0);
    expect(produced).toBeGreaterThan(0);
  });
});
