import { randomUUID } from "node:crypto";
import { echoAgent } from "../../src/agent/echo.js";
import { settingsFromMetadata } from "../../src/agent/factory.js";
import { afterEach, describe, expect, it } from "vitest";
import { parseCommand, addressedElsewhere } from "../../src/runtime/commands/index.js";
import { PROVIDERS } from "../support/db.js";
import { finals, makeRuntime, message, notices, privateChat, send, waitUntil, type TestRuntime } from "../support/runtime.js";

describe("parseCommand", () => {
  it("parses names, targets and arguments, and rejects non-commands", () => {
    expect(parseCommand("/new")).toEqual({ name: "new", target: undefined, args: "" });
    expect(parseCommand("/New@MyBot pirate  ")).toEqual({ name: "new", target: "MyBot", args: "pirate" });
    expect(parseCommand("/sessions cats and dogs")).toEqual({ name: "sessions", target: undefined, args: "cats and dogs" });
    for (const t of ["hello", "/", "/ new", "a /new", "//x", 42, undefined]) expect(parseCommand(t)).toBeUndefined();
    expect(addressedElsewhere(parseCommand("/new@otherbot")!, "mybot")).toBe(true);
    expect(addressedElsewhere(parseCommand("/new@MYBOT")!, "@mybot")).toBe(false);
    expect(addressedElsewhere(parseCommand("/new")!, "mybot")).toBe(false);
  });
});

describe.each(PROVIDERS)("slash commands on %s", (provider) => {
  let rt: TestRuntime;
  afterEach(async () => rt?.close());

  it("/new rotates, links the child to its parent, and later messages reach the new session", async () => {
    rt = await makeRuntime(provider);
    const conv = privateChat();
    await (await send(rt, conv, message(conv, "remember this"))).done;
    const old = await rt.registry.resolveChatChannel(conv);
    await send(rt, conv, message(conv, "/new"));
    const current = await rt.registry.resolveChatChannel(conv);
    expect(current.id).not.toBe(old.id);
    expect(current.parentId).toBe(old.id);
    expect((await rt.registry.getUnscoped(old.id)).archived).toBe(true);
    expect(notices(rt.events).at(-1)).toBe(`Started a fresh session. session: ${current.id}`);
    await (await send(rt, conv, message(conv, "hi"))).done;
    expect((await rt.transcript.recent(current.id, 10)).map((m) => m.content)).toEqual(["hi", "echo: hi"]);
  });

  it("/reset is /new; /new <persona> sets the persona; an unknown persona is refused", async () => {
    rt = await makeRuntime(provider);
    const conv = privateChat();
    const first = await rt.registry.resolveChatChannel(conv);
    await send(rt, conv, message(conv, "/reset pirate"));
    const second = await rt.registry.resolveChatChannel(conv);
    expect(second.id).not.toBe(first.id);
    expect(second.persona).toBe("pirate");
    await send(rt, conv, message(conv, "/new wizard"));
    expect((await rt.registry.resolveChatChannel(conv)).id).toBe(second.id);
    expect(notices(rt.events).at(-1)).toMatch(/Unknown persona "wizard". Available: coach, default, pirate/);
  });

  it("a 100-way /new race in one chat gives exactly one rotation and 99 'already started' notices, losing nothing", async () => {
    rt = await makeRuntime(provider);
    const conv = privateChat();
    const bound = await rt.registry.resolveChatChannel(conv);
    const s = rt.runner.open(bound);
    const handles = await Promise.all(Array.from({ length: 100 }, () => rt.runner.run(s, message(conv, "/new"))));
    expect(handles.every((h) => h.accepted === "consumed")).toBe(true);
    const texts = notices(rt.events);
    expect(texts.filter((t) => t.startsWith("Started a fresh session"))).toHaveLength(1);
    expect(texts.filter((t) => t === "A fresh session was already started.")).toHaveLength(99);
    const all = await rt.registry.list({ userId: conv.userId, agentId: conv.agentId }, { includeArchived: true });
    expect(all).toHaveLength(2);
    expect(all.filter((x) => !x.archived)).toHaveLength(1);
    const after = await send(rt, conv, message(conv, "still here?"));
    await after.done;
    expect(finals(rt.events)).toEqual(["echo: still here?"]);
  });

  it("/status counts the turns the live session ran since it opened", async () => {
    rt = await makeRuntime(provider);
    const conv = privateChat();
    for (const text of ["a", "b"]) await (await send(rt, conv, message(conv, text))).done;
    await send(rt, conv, message(conv, "/status"));
    await waitUntil(() => notices(rt.events).some((n) => n.startsWith("session: ")), 5_000, "the status");
    expect(notices(rt.events).find((n) => n.startsWith("session: "))).toMatch(/^turns: 2$/m);
  });

  it("/status shows the session: and turns: tokens, model, persona, start and archived count", async () => {
    rt = await makeRuntime(provider);
    const conv = privateChat();
    await (await send(rt, conv, message(conv, "a"))).done;
    await send(rt, conv, message(conv, "/new coach"));
    await (await send(rt, conv, message(conv, "b"))).done;
    await send(rt, conv, message(conv, "/status"));
    const current = await rt.registry.resolveChatChannel(conv);
    const status = notices(rt.events).at(-1)!;
    expect(status).toContain(`session: ${current.id}`);
    expect(status).toMatch(/^turns: 1$/m);
    expect(status).toMatch(/^model: echo$/m);
    expect(status).toMatch(/^persona: coach$/m);
    expect(status).toMatch(/^started: \d{4}-\d\d-\d\d \d\d:\d\d UTC$/m);
    expect(status).toMatch(/^archived sessions: 1$/m);
  });

  it("/model, /think and /temperature validate and set metadata; bad values get an error saying what is allowed", async () => {
    rt = await makeRuntime(provider);
    const conv = privateChat();
    await send(rt, conv, message(conv, "/model llama3.1:8b"));
    await send(rt, conv, message(conv, "/think high"));
    await send(rt, conv, message(conv, "/temperature 0.3"));
    const s = await rt.registry.resolveChatChannel(conv);
    expect(s.metadata).toEqual({ "model.name": "llama3.1:8b", "model.thinking_level": "high", "model.temperature": 0.3 });
    for (const bad of ["/temperature 7", "/think lots", "/model has spaces in it"]) await send(rt, conv, message(conv, bad));
    const errs = rt.events.filter((e) => e.kind === "notice" && e.severity === "error").map((e) => (e.kind === "notice" ? e.text : ""));
    expect(errs[0]).toMatch(/from 0 to 2/);
    expect(errs[1]).toMatch(/off, low, medium, high/);
    expect(errs[2]).toMatch(/model name/);
    expect((await rt.registry.resolveChatChannel(conv)).metadata["model.temperature"]).toBe(0.3);
  });

  it("/maxtokens sets the max-output-tokens key the agent factory reads; a bad value says what is allowed; /help lists it", async () => {
    const seen: Array<number | undefined> = [];
    rt = await makeRuntime(provider, {
      agent: (metadata) => {
        seen.push(settingsFromMetadata(metadata, { model: "echo" }).maxOutputTokens);
        return echoAgent();
      },
    });
    const conv = privateChat();
    await send(rt, conv, message(conv, "/maxtokens 256"));
    expect(notices(rt.events).at(-1)).toBe("max output tokens set to 256.");
    expect((await rt.registry.resolveChatChannel(conv)).metadata).toEqual({ "model.max_output_tokens": 256 });
    for (const bad of ["/maxtokens 0", "/maxtokens 2.5", "/maxtokens lots", "/maxtokens 99999999"]) {
      await send(rt, conv, message(conv, bad));
      expect(notices(rt.events).at(-1)).toBe("The max output tokens must be a whole number from 1 to 1000000, for example 1024.");
    }
    await send(rt, conv, message(conv, "/maxtokens"));
    expect(notices(rt.events).at(-1)).toBe("max output tokens: 256. Usage: /maxtokens <value>");
    await (await send(rt, conv, message(conv, "hello"))).done;
    expect(seen.at(-1)).toBe(256);
    await send(rt, conv, message(conv, "/help"));
    expect(notices(rt.events).at(-1)).toContain("/maxtokens <value> - set the max output tokens");
  });

  it("/persona sets a known persona and lists the choices otherwise", async () => {
    rt = await makeRuntime(provider);
    const conv = privateChat();
    await send(rt, conv, message(conv, "/persona pirate"));
    expect((await rt.registry.resolveChatChannel(conv)).persona).toBe("pirate");
    await send(rt, conv, message(conv, "/persona nobody"));
    expect(notices(rt.events).at(-1)).toMatch(/Unknown persona "nobody"/);
  });

  it("/sessions lists this chat's sessions and searches their transcripts; /resume switches back", async () => {
    rt = await makeRuntime(provider);
    const conv = privateChat();
    await (await send(rt, conv, message(conv, "let us talk about giraffes"))).done;
    const first = await rt.registry.resolveChatChannel(conv);
    await send(rt, conv, message(conv, "/new"));
    await (await send(rt, conv, message(conv, "now penguins"))).done;
    const other = privateChat();
    await (await send(rt, other, message(other, "giraffes elsewhere"))).done;

    await send(rt, conv, message(conv, "/sessions"));
    const list = notices(rt.events).at(-1)!;
    expect(list).toMatch(/^1\. .* \(current\)/);
    expect(list).toContain(`2. ${first.id} (archived: ended by /new)`);
    // Lineage: the current session follows the one /new ended.
    expect(list.split("\n")[0]).toMatch(/ \(current\), 1 turns, .*; follows 2$/);
    expect(list).not.toContain((await rt.registry.resolveChatChannel(other)).id);

    await send(rt, conv, message(conv, "/sessions giraffes"));
    const found = notices(rt.events).at(-1)!;
    expect(found).toContain(first.id);
    expect(found).not.toContain((await rt.registry.resolveChatChannel(other)).id);

    await send(rt, conv, message(conv, "/resume 2"));
    expect(notices(rt.events).at(-1)).toBe(`Resumed session ${first.id} (1 turns).`);
    expect((await rt.registry.resolveChatChannel(conv)).id).toBe(first.id);
    await (await send(rt, conv, message(conv, "back again"))).done;
    expect((await rt.transcript.recent(first.id, 10)).map((m) => m.content)).toContain("back again");
  });

  it("/resume answers the same for another chat's session and for an id that does not exist (no existence oracle)", async () => {
    rt = await makeRuntime(provider);
    const conv = privateChat();
    const other = privateChat();
    const theirs = await rt.registry.resolveChatChannel(other);
    const group = { agentId: "bot", userId: randomUUID(), channel: "telegram:bot:group:-100" };
    const groupSession = await rt.registry.resolveChatChannel({ ...group, groupId: group.userId });
    await rt.registry.resolveChatChannel(conv);
    const answer = async (id: string) => {
      await send(rt, conv, message(conv, `/resume ${id}`));
      return notices(rt.events).at(-1)!.replace(id, "<id>");
    };
    const missing = randomUUID();
    const answers = [await answer(theirs.id), await answer(groupSession.id), await answer(missing), await answer("not-a-uuid")];
    expect(new Set(answers).size).toBe(1);
    expect(answers[0]).toBe("NotFound: Session <id> was not found in this chat. See /sessions for this chat's sessions.");
    expect((await rt.registry.resolveChatChannel(other)).id).toBe(theirs.id);
  });

  it("/whoami and /help answer; /cmd@otherbot is ignored; unknown commands get a hint", async () => {
    rt = await makeRuntime(provider);
    const conv = privateChat();
    await send(rt, conv, message(conv, "/whoami"));
    expect(notices(rt.events).at(-1)).toMatch(/^platform: telegram\nsender: u1/);
    await send(rt, conv, message(conv, "/help"));
    const help = notices(rt.events).at(-1)!;
    for (const c of ["/new", "/status", "/stop", "/sessions", "/resume", "/model", "/persona", "/whoami", "/help"]) expect(help).toContain(c);
    const before = rt.events.length;
    const h = await send(rt, conv, message(conv, "/new@otherbot", { botUsername: "mybot" }));
    expect(h.accepted).toBe("consumed");
    expect(rt.events.length).toBe(before);
    await send(rt, conv, message(conv, "/frobnicate"));
    expect(notices(rt.events).at(-1)).toBe("Unknown command /frobnicate. Send /help for the list.");
  });
});
