/**
 * The Discord normalizers under fuzz: 10,000 generated gateway payloads (and
 * junk). Slow tier: generating the inputs takes ~10 s on two cores. The
 * hand-written cases are in normalize.test.ts.
 */
import fc from "fast-check";
import { expect, it, describe } from "vitest";
import { normalizeInteraction } from "../../../adapters/discord/commands.js";
import { normalizeMessage } from "../../../adapters/discord/normalize.js";

const BOT = "900000000000000001";
const ALICE = "900000000000000002";
const GENERAL = "900000000000000011";
const ROLE = "900000000000000020";

describe("fuzz", () => {
  const anything = fc.anything({ maxDepth: 2 });
  const id = fc.oneof(
    { weight: 6, arbitrary: fc.bigInt({ min: 1n, max: (1n << 64n) - 1n }).map(String) },
    { weight: 2, arbitrary: fc.constantFrom(BOT, ALICE, GENERAL) },
    { weight: 1, arbitrary: fc.string() },
    { weight: 1, arbitrary: fc.integer() },
  );
  /** Mostly valid, sometimes anything: so both the happy path and the guards are exercised. */
  const mostly = <T>(a: fc.Arbitrary<T>): fc.Arbitrary<unknown> => fc.oneof({ weight: 5, arbitrary: a }, { weight: 1, arbitrary: anything });
  const user = fc.record(
    { id: mostly(id), username: fc.oneof(fc.string(), anything), bot: fc.oneof(fc.boolean(), anything), global_name: fc.oneof(fc.string(), fc.constant(null)) },
    { requiredKeys: ["id"] },
  );
  const payload = fc.record(
    {
      id,
      type: mostly(fc.constantFrom(0, 0, 19, 2, 7)),
      channel_id: id,
      guild_id: fc.oneof(id, fc.constant(undefined)),
      channel_type: fc.oneof(fc.integer({ min: -1, max: 20 }), anything),
      author: mostly(user),
      user: fc.oneof(user, anything),
      member: fc.oneof(fc.record({ nick: fc.oneof(fc.string(), anything), user }), anything),
      content: mostly(fc.oneof(fc.string({ minLength: 1 }), fc.constant(`<@${BOT}> hi`), fc.constant(`@everyone <@&${ROLE}>`))),
      timestamp: fc.oneof(
        fc.string(),
        fc.date({ noInvalidDate: false }).map((d) => (Number.isNaN(d.getTime()) ? "x" : d.toISOString())),
        anything,
      ),
      mentions: fc.oneof(fc.array(fc.oneof(user, anything)), anything),
      mention_roles: fc.oneof(fc.array(id), anything),
      referenced_message: fc.oneof(fc.record({ author: fc.oneof(user, anything) }), anything),
      attachments: fc.oneof(
        fc.array(
          fc.oneof(
            fc.record({ url: fc.oneof(fc.string(), anything), content_type: fc.oneof(fc.string(), anything), size: anything, filename: anything }),
            anything,
          ),
        ),
        anything,
      ),
      flags: fc.oneof(fc.integer(), anything),
      webhook_id: fc.oneof(fc.constant(undefined), id),
      token: mostly(fc.stringMatching(/^[A-Za-z0-9._-]{1,20}$/)),
      application_id: id,
      data: mostly(fc.record({ name: fc.oneof(fc.string(), fc.constant("new")), type: mostly(fc.constant(1)), options: anything }, { requiredKeys: ["name"] })),
      channel: fc.oneof(fc.record({ type: anything, parent_id: id, name: anything }), anything),
    },
    { requiredKeys: ["id", "channel_id", "author", "content"] },
  );
  const channelInfo = fc.option(
    fc.record({ type: fc.integer({ min: 0, max: 16 }), parentId: fc.option(fc.constant(GENERAL), { nil: undefined }) }, { requiredKeys: ["type"] }),
    { nil: undefined },
  );

  it("10,000 generated gateway payloads (plus junk) never throw; what comes out is well-formed", () => {
    let envelopes = 0;
    let runs = 0;
    fc.assert(
      fc.property(fc.oneof({ weight: 9, arbitrary: payload }, { weight: 1, arbitrary: anything }), channelInfo, fc.boolean(), (raw, info, allowBots) => {
        runs++;
        const identity = { id: BOT, allowBots, mentionRoles: [ROLE] };
        for (const out of [normalizeMessage(raw, identity, info), normalizeInteraction(raw, identity, info)?.env]) {
          if (!out) continue;
          envelopes++;
          expect(out.platform).toBe("discord");
          expect(out.senderId).not.toBe(BOT);
          expect(Number.isNaN(out.occurredAt.getTime())).toBe(false);
          expect(typeof out.text).toBe("string");
          if (out.chatKind === "thread") expect(out.threadId).toBe(out.replyTo.chatId);
        }
      }),
      { numRuns: 10_000 },
    );
    expect(runs).toBe(10_000);
    // The generator must actually reach the happy path, or the fuzz proves little.
    expect(envelopes).toBeGreaterThan(100);
  });
});
