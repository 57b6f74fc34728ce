/**
 * Fuzzing: every adapter's normalizer, the console's HTTP message route, the
 * command parser and the full command interceptor in a real Runner get
 * 10,000 fast-check inputs each. 0 crashes, 0 unhandled rejections.
 */
import fc from "fast-check";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ConsoleAdapter } from "../../adapters/console/index.js";
import { normalizeInteraction, normalizeMessage } from "../../adapters/discord/index.js";
import { normalizeEvent } from "../../adapters/slack/index.js";
import { normalizeUpdateUnguarded } from "../../adapters/telegram/normalize.js";
import { parseCommand } from "../../src/runtime/commands/parse.js";
import { isSessionError } from "../../src/session/errors.js";
import { freshDatabaseUrl } from "../support/db.js";
import { makeRuntime, message, privateChat, type TestRuntime } from "../support/runtime.js";
import { boot, report, type Booted } from "./helpers.js";

const RUNS = 10_000;
let unhandled = 0;
const onUnhandled = () => void unhandled++;
beforeAll(() => void process.on("unhandledRejection", onUnhandled));
afterAll(() => void process.off("unhandledRejection", onUnhandled));

const junk = fc.anything({
  maxDepth: 3,
  maxKeys: 6,
  withNullPrototype: true,
  withBigInt: true,
  withMap: true,
  withSet: true,
  withTypedArray: true,
  withSparseArray: true,
  withUnicodeString: true,
});
const maybe = <T>(a: fc.Arbitrary<T>) => fc.oneof({ weight: 4, arbitrary: a as fc.Arbitrary<unknown> }, { weight: 1, arbitrary: junk });
const text = fc.oneof(
  fc.string(),
  fc.string({ unit: "grapheme" }),
  fc.string({ unit: "binary" }),
  fc.constantFrom("", " ", "/new", "/status@bot", "<@123456789012345678> hi", "@bot hi", "\u0000", "\uD800", "a".repeat(5000)),
);
const snowflake = fc.oneof(fc.bigInt({ min: 0n, max: 2n ** 64n }).map(String), fc.constantFrom("123456789012345678", "0", "-1", "1e20", ""));
const slackId = fc.oneof(fc.stringMatching(/^[UCDGWBT][A-Z0-9]{2,12}$/), fc.string());
const slackTs = fc.oneof(
  fc.tuple(fc.nat(2_000_000_000), fc.nat(999_999)).map(([a, b]) => `${a}.${String(b).padStart(6, "0")}`),
  fc.string(),
);

/** Runs `fn` on every input; returns how many threw. */
function fuzz<T>(arb: fc.Arbitrary<T>, fn: (v: T) => void): { runs: number; crashes: number; firstCrash?: string } {
  let runs = 0;
  let crashes = 0;
  let firstCrash: string | undefined;
  fc.assert(
    fc.property(arb, (v) => {
      runs++;
      try {
        fn(v);
      } catch (e) {
        crashes++;
        firstCrash ??= `${String(e)} on ${fc.stringify(v).slice(0, 300)}`;
      }
    }),
    { numRuns: RUNS },
  );
  return { runs, crashes, ...(firstCrash ? { firstCrash } : {}) };
}

describe("normalizers", () => {
  it("telegram normalizeUpdate (unguarded)", () => {
    const user = fc.record(
      { id: maybe(fc.integer()), is_bot: maybe(fc.boolean()), first_name: maybe(text), username: maybe(fc.constantFrom("switchboard_test_bot", "alice")) },
      { requiredKeys: [] },
    );
    const chat = fc.record(
      { id: maybe(fc.integer()), type: maybe(fc.constantFrom("private", "group", "supergroup", "channel")), title: maybe(text), is_forum: maybe(fc.boolean()) },
      { requiredKeys: [] },
    );
    const entity = fc.record(
      {
        type: maybe(fc.constantFrom("mention", "bot_command", "text_mention")),
        offset: maybe(fc.integer({ min: -5, max: 80 })),
        length: maybe(fc.integer({ min: -5, max: 80 })),
        user: maybe(user),
      },
      { requiredKeys: [] },
    );
    const msg = fc.record(
      {
        message_id: maybe(fc.integer()),
        date: maybe(fc.integer()),
        chat: maybe(chat),
        from: maybe(user),
        text: maybe(text),
        caption: maybe(text),
        entities: maybe(fc.array(entity, { maxLength: 4 })),
        message_thread_id: maybe(fc.integer()),
        is_topic_message: maybe(fc.boolean()),
        reply_to_message: maybe(fc.record({ message_id: maybe(fc.integer()), from: maybe(user) }, { requiredKeys: [] })),
        photo: maybe(fc.array(junk, { maxLength: 2 })),
        document: maybe(junk),
        voice: maybe(junk),
      },
      { requiredKeys: [] },
    );
    const update = fc.oneof(
      fc.record({ update_id: maybe(fc.integer()), message: maybe(msg), edited_message: maybe(msg), channel_post: maybe(msg) }, { requiredKeys: [] }),
      junk,
    );
    const r = fuzz(update, (u) => void normalizeUpdateUnguarded(u, { id: "7000000001", username: "switchboard_test_bot" }));
    report("fuzz-telegram-normalizeUpdate", { ...r, unhandledRejections: unhandled });
    expect(r.crashes).toBe(0);
  });

  it("discord normalizeMessage and normalizeInteraction", () => {
    const author = fc.record({ id: maybe(snowflake), bot: maybe(fc.boolean()), username: maybe(text), global_name: maybe(text) }, { requiredKeys: [] });
    const raw = fc.oneof(
      fc.record(
        {
          id: maybe(snowflake),
          channel_id: maybe(snowflake),
          guild_id: maybe(snowflake),
          author: maybe(author),
          content: maybe(text),
          type: maybe(fc.constantFrom(0, 19, 7, -1)),
          mentions: maybe(fc.array(author, { maxLength: 3 })),
          mention_roles: maybe(fc.array(snowflake, { maxLength: 2 })),
          mention_everyone: maybe(fc.boolean()),
          attachments: maybe(fc.array(junk, { maxLength: 2 })),
          referenced_message: maybe(junk),
          message_reference: maybe(junk),
          flags: maybe(fc.integer()),
          timestamp: maybe(
            fc.oneof(
              fc.date().map((d) => (Number.isNaN(d.getTime()) ? "x" : d.toISOString())),
              fc.string(),
            ),
          ),
          thread: maybe(junk),
        },
        { requiredKeys: [] },
      ),
      junk,
    );
    const channel = fc.option(
      fc.record({ type: maybe(fc.constantFrom(0, 1, 3, 5, 10, 11, 12, 15)), parentId: maybe(snowflake), name: maybe(text) }, { requiredKeys: [] }),
      { nil: undefined },
    );
    const m = fuzz(
      fc.tuple(raw, channel),
      ([r, c]) => void normalizeMessage(r, { id: "123456789012345678", mentionRoles: ["223456789012345678"] }, c as never),
    );
    const interaction = fc.oneof(
      fc.record(
        {
          id: maybe(snowflake),
          type: maybe(fc.constantFrom(1, 2, 3, 4)),
          token: maybe(text),
          application_id: maybe(snowflake),
          channel_id: maybe(snowflake),
          guild_id: maybe(snowflake),
          data: maybe(
            fc.record(
              {
                type: maybe(fc.constantFrom(1, 2)),
                name: maybe(fc.oneof(fc.constantFrom("new", "status", "stop", "help"), text)),
                options: maybe(fc.array(junk, { maxLength: 3 })),
              },
              { requiredKeys: [] },
            ),
          ),
          member: maybe(fc.record({ user: maybe(author) }, { requiredKeys: [] })),
          user: maybe(author),
          channel: maybe(junk),
        },
        { requiredKeys: [] },
      ),
      junk,
    );
    const i = fuzz(fc.tuple(interaction, channel), ([r, c]) => void normalizeInteraction(r, { id: "123456789012345678" }, c as never));
    report("fuzz-discord-normalize", { message: m, interaction: i, unhandledRejections: unhandled });
    expect(m.crashes + i.crashes).toBe(0);
  });

  it("slack normalizeEvent", () => {
    const event = fc.record(
      {
        type: maybe(fc.constantFrom("message", "app_mention", "reaction_added")),
        subtype: maybe(fc.constantFrom(undefined, "bot_message", "file_share", "thread_broadcast", "message_changed")),
        channel: maybe(slackId),
        channel_type: maybe(fc.constantFrom("im", "channel", "group", "mpim")),
        user: maybe(slackId),
        bot_id: maybe(slackId),
        text: maybe(text),
        ts: maybe(slackTs),
        thread_ts: maybe(slackTs),
        event_ts: maybe(slackTs),
        team: maybe(slackId),
        files: maybe(fc.array(junk, { maxLength: 2 })),
        user_profile: maybe(junk),
        hidden: maybe(fc.boolean()),
        blocks: maybe(junk),
      },
      { requiredKeys: [] },
    );
    const body = fc.oneof(
      fc.record(
        {
          type: maybe(fc.constant("event_callback")),
          team_id: maybe(slackId),
          event_id: maybe(fc.string()),
          event_time: maybe(fc.integer()),
          event: maybe(event),
          authorizations: maybe(junk),
        },
        { requiredKeys: [] },
      ),
      event,
      junk,
    );
    const r = fuzz(
      fc.tuple(body, fc.boolean()),
      ([b, knownThread]) => void normalizeEvent(b, { teamId: "T0FAKE001", botUserId: "U0FAKEBOT", botId: "B0FAKEBOT" }, { knownThread }),
    );
    report("fuzz-slack-normalizeEvent", { ...r, unhandledRejections: unhandled });
    expect(r.crashes).toBe(0);
  });
});

describe("the console's message route over HTTP", () => {
  let b: Booted | undefined;
  afterEach(async () => {
    await b?.app.stop();
    b = undefined;
  });

  it("10,000 bodies: never a 5xx, never a crash", async () => {
    b = await boot(await freshDatabaseUrl("sqlite"), [new ConsoleAdapter()]);
    const idArb = fc.oneof(fc.stringMatching(/^[a-z0-9-]{1,12}$/), text);
    const valid = fc.record(
      {
        chat: fc.oneof(
          fc.record({ type: fc.constant("private") }),
          fc.record({ type: fc.constant("group"), id: idArb, threadId: fc.option(idArb, { nil: undefined }), title: fc.option(text, { nil: undefined }) }),
        ),
        sender: fc.record({ id: idArb, name: text }),
        text,
        mention: maybe(fc.boolean()),
        clientId: maybe(fc.uuid()),
      },
      { requiredKeys: ["chat", "sender", "text"] },
    );
    const safe = (v: unknown) => {
      try {
        return JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? String(x) : x)) ?? "null";
      } catch {
        return "{}";
      }
    };
    const bodies = fc.oneof(
      { weight: 1, arbitrary: valid.map(safe) },
      { weight: 3, arbitrary: fc.oneof(junk.map(safe), fc.string(), fc.string({ unit: "binary" })) },
    );
    const samples = fc.sample(bodies, { numRuns: RUNS });
    const statuses = new Map<number, number>();
    let networkErrors = 0;
    let next = 0;
    const worker = async () => {
      while (next < samples.length) {
        const body = samples[next++]!;
        try {
          const r = await fetch(`${b!.url}/api/console/messages`, { method: "POST", headers: { "content-type": "application/json" }, body });
          await r.arrayBuffer();
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        } catch {
          networkErrors++;
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    await b.app.gateway.idle();
    const health = (await fetch(`${b.url}/healthz`)).status;
    const byStatus = Object.fromEntries([...statuses].sort());
    const fivexx = [...statuses].filter(([s]) => s >= 500).reduce((n, [, c]) => n + c, 0);
    report("fuzz-console-route", { runs: samples.length, byStatus, fivexx, networkErrors, healthAfter: health, unhandledRejections: unhandled });
    expect({ fivexx, networkErrors, health }).toEqual({ fivexx: 0, networkErrors: 0, health: 200 });
  }, 240_000);
});

const NAMES = [
  "new",
  "reset",
  "status",
  "stop",
  "model",
  "think",
  "temperature",
  "persona",
  "sessions",
  "resume",
  "whoami",
  "help",
  "start",
  "approve",
  "nope",
  "NEW",
  "Status",
];
const commandText = fc
  .tuple(
    fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...NAMES) }, { weight: 1, arbitrary: fc.string({ maxLength: 40 }) }),
    fc.oneof(
      fc.constant(""),
      fc.constantFrom("@bot", "@otherbot", "@", "@BOT", "@a.b-c"),
      fc.string({ maxLength: 70 }).map((s) => `@${s}`),
    ),
    fc.oneof(
      fc.constant(""),
      text,
      fc.uuid(),
      fc.integer({ min: -5, max: 30 }).map(String),
      fc.constantFrom("high", "off", "2", "-1", "NaN", "1e309", "pirate", "gpt-4o", "x".repeat(100_000), "\u202Eevil", "👩‍👩‍👧‍👦", "\uDC00\uD800"),
    ),
    fc.constantFrom(" ", "  ", "\n", "\t", "\u00A0", "\u3000"),
    fc.constantFrom("/", "/", "/", " /", "／"),
  )
  .map(([name, at, args, sep, slash]) => `${slash}${name}${at}${args ? sep + args : ""}`);

describe("commands", () => {
  it("parseCommand", () => {
    const r = fuzz(fc.oneof(commandText, junk, text), (t) => {
      const c = parseCommand(t);
      if (c && (typeof c.name !== "string" || typeof c.args !== "string")) throw new Error("bad parse result");
    });
    report("fuzz-parseCommand", { ...r, unhandledRejections: unhandled });
    expect(r.crashes).toBe(0);
  });

  let rt: TestRuntime | undefined;
  afterEach(async () => {
    await rt?.close();
    rt = undefined;
  });

  it("the full command interceptor in a real Runner", async () => {
    rt = await makeRuntime("sqlite");
    const convs = Array.from({ length: 16 }, () => privateChat("bot"));
    let runs = 0;
    let crashes = 0;
    const typedRefusals: Record<string, number> = {};
    const outcomes: Record<string, number> = {};
    let firstCrash: string | undefined;
    const firstTyped: Record<string, string> = {};
    const samples = fc.sample(fc.tuple(commandText, fc.nat(15), fc.boolean()), { numRuns: RUNS });
    for (const [t, ci, isAdmin] of samples) {
      runs++;
      const conv = convs[ci]!;
      try {
        const info = await rt.registry.resolveChatChannel(conv);
        const handle = await rt.runner.run(rt.runner.open(info), message(conv, t, { isAdmin, botUsername: "bot" }));
        const outcome = await handle.done;
        outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
      } catch (e) {
        if (isSessionError(e)) {
          const code = (e as { code: string }).code;
          typedRefusals[code] = (typedRefusals[code] ?? 0) + 1;
          firstTyped[code] ??= `${t.slice(0, 80)} -> ${(e as Error).message.slice(0, 120)}`;
        } else {
          crashes++;
          firstCrash ??= `${String(e)} on ${JSON.stringify(t.slice(0, 200))}`;
        }
      }
    }
    const notices = rt.events.filter((e) => e.kind === "notice").length;
    report("fuzz-command-interceptor", {
      runs,
      crashes,
      unhandledRejections: unhandled,
      notices,
      outcomes,
      sessionErrorsThrownOutOfRunner: typedRefusals,
      examples: firstTyped,
      ...(firstCrash ? { firstCrash } : {}),
    });
    expect(crashes).toBe(0);
    expect(unhandled).toBe(0);
    // A command must answer, never throw out of the runner (the gateway turns a throw into "no reply" + a stuck inbound event).
    expect(typedRefusals).toEqual({});
  }, 300_000);
});
