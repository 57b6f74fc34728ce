import { parseMaxOutputTokens, parseModelName, parseTemperature, parseThinkingLevel, METADATA_KEYS } from "../../agent/factory.js";
import type { PersonaRegistry } from "../../agent/personas.js";
import { isSessionError } from "../../session/errors.js";
import type { Info } from "../../session/info.js";
import type { TranscriptStore } from "../../store/transcript.js";
import type { MessageEvent, Severity } from "../events.js";
import type { ConversationCapabilities, Interceptor } from "../interceptors.js";
import type { LiveSession } from "../live-session.js";
import { addressedElsewhere, parseCommand, type ParsedCommand } from "./parse.js";

export type CommandAccess = "anyone" | "admin";

/** What a command may cancel in its session before it runs (CommandSpec.cancels). */
export type Cancellable = "approvals";

export interface CommandContext {
  event: MessageEvent;
  session: LiveSession;
  can: ConversationCapabilities;
  args: string;
  /** The name the command was called by (an alias, for instance /reset). */
  name: string;
  notify(severity: Severity, text: string): void;
}

export interface CommandSpec {
  name: string;
  aliases?: string[];
  summary: string;
  usage?: string;
  access?: CommandAccess;
  /**
   * What the command cancels before it runs (CommandOptions.cancel does it):
   * "approvals", the tool calls its session waits on a person for (/stop,
   * /new: a turn held by an approval would never stop or become idle).
   */
  cancels?: Cancellable;
  /** Runs the command; the message is consumed (a command never reaches a turn). */
  run(ctx: CommandContext): Promise<void> | void;
}

export interface CommandOptions {
  transcript: TranscriptStore;
  personas: PersonaRegistry;
  /** Command names only operators may run (overrides each command's default). */
  adminCommands?: string[];
  /** The model shown by /status when the session sets none. */
  defaultModel?: string;
  /** MODELS_ALLOWED: the only models /model may choose (empty or unset: any valid name). */
  modelsAllowed?: readonly string[];
  /** Extra commands (the gateway adds /approve). */
  extra?: CommandSpec[];
  /** How each Cancellable is cancelled in a session, `reason` naming the command (`/new`); without one, nothing is. */
  cancel?: Partial<Record<Cancellable, (sessionId: string, reason: string) => Promise<unknown>>>;
}

const fmtDate = (d: Date) => `${d.toISOString().replace("T", " ").slice(0, 16)} UTC`;

const ENDED: Record<string, string> = {
  new: "ended by /new",
  reset: "ended by /reset",
  resume: "left by /resume",
  archive: "archived",
  rotate: "rotated by an operator",
  repair: "replaced after an archive",
};

/** One line of /sessions: its number, state and why it ended, turns, last activity, and the session it continues (lineage). */
function describeSession(s: Info, i: number, list: Info[], currentId: string): string {
  const state = s.id === currentId ? " (current)" : s.archived ? ` (archived: ${ENDED[s.endReason ?? "archive"] ?? "archived"})` : "";
  const parent = s.parentId ? list.findIndex((p) => p.id === s.parentId) : -1;
  const lineage = s.parentId ? `; follows ${parent >= 0 ? parent + 1 : s.parentId.slice(0, 8)}` : "";
  return `${i + 1}. ${s.id}${state}, ${s.turnCount} turns, ${fmtDate(s.lastActive)}${lineage}`;
}

/** For /model under MODELS_ALLOWED: a valid name that is not on the list gets the list. */
export function allowedModel(v: string, allowed: readonly string[] | undefined): ReturnType<typeof parseModelName> {
  const r = parseModelName(v);
  if (!r.ok || !allowed?.length || allowed.includes(r.value)) return r;
  return { ok: false, error: `The model ${r.value} is not allowed here. Choose one of: ${allowed.join(", ")}.` };
}

export function builtinCommands(opts: CommandOptions): CommandSpec[] {
  const rotate = async (ctx: CommandContext) => {
    const persona = ctx.args.split(/\s+/)[0]?.toLowerCase() || undefined;
    if (persona && !opts.personas.has(persona)) {
      ctx.notify("error", `Unknown persona "${persona}". Available: ${opts.personas.names().join(", ")}.`);
      return;
    }
    const { session, can, event } = ctx;
    // /new is ordered like a message: what was sent before it is answered first, in the old session.
    // (To abandon an answer in progress, /stop it.)
    await can.whenIdle();
    const reason = ctx.name === "reset" ? "reset" : "new";
    // Without a recorded stamp (see RotateRequest.inboundId), the session the event was taken into.
    const fallback = event.boundSessionId ?? session.id;
    try {
      // Compare against the session this /new was bound to on arrival (the registry reads the recorded stamp), not whatever is current now.
      const current = await can.rotate({ expectedSessionId: fallback, persona, reason });
      ctx.notify("success", `Started a fresh session${persona ? ` with persona ${persona}` : ""}. session: ${current.id}`);
    } catch (e) {
      if (isSessionError(e, "StaleRotation")) {
        ctx.notify("info", "A fresh session was already started.");
        return;
      }
      if (!isSessionError(e, "RotationOutcomeUnknown")) throw e;
      const expected = typeof e.details.expectedSessionId === "string" ? e.details.expectedSessionId : fallback;
      const verdict = await can.verifyRotation(expected);
      if (verdict === "Committed") {
        const current = await can.followBinding(expected);
        ctx.notify("success", `Started a fresh session. session: ${current.id}`);
      } else if (verdict === "NotExecuted") ctx.notify("error", "Could not start a fresh session (the database did not confirm it). Please send /new again.");
      else ctx.notify("warn", "It is not certain whether a fresh session was started. Send /status to check.");
    }
  };

  const setting = (
    name: string,
    key: string,
    parse: (v: string) => { ok: true; value: unknown } | { ok: false; error: string },
    describe: string,
    hint = "",
  ): CommandSpec => ({
    name,
    summary: `set the ${describe}`,
    usage: `/${name} <value>`,
    async run(ctx) {
      if (!ctx.args) {
        await ctx.can.refresh();
        ctx.notify("info", `${describe}: ${String(ctx.session.metadata[key] ?? "(default)")}. Usage: /${name} <value>${hint}`);
        return;
      }
      const r = parse(ctx.args);
      if (!r.ok) {
        ctx.notify("error", r.error);
        return;
      }
      await ctx.session.setMetadata(key, r.value);
      ctx.notify("success", `${describe} set to ${String(r.value)}.`);
    },
  });

  const commands: CommandSpec[] = [
    { name: "new", aliases: ["reset"], summary: "start a fresh session (the old one stays archived)", usage: "/new [persona]", cancels: "approvals", run: rotate },
    {
      name: "stop",
      summary: "stop the running answer and drop queued messages",
      cancels: "approvals",
      run(ctx) {
        const { running, dropped } = ctx.can.stop();
        ctx.notify(
          "info",
          running || dropped ? `Stopped.${dropped ? ` Dropped ${dropped} queued message${dropped === 1 ? "" : "s"}.` : ""}` : "Nothing to stop.",
        );
      },
    },
    {
      name: "status",
      summary: "show this conversation's session",
      async run(ctx) {
        await ctx.can.refresh();
        const info = ctx.session.info;
        const sessions = await ctx.can.sessions(1000);
        const archived = sessions.filter((s) => s.archived).length;
        // The live session's info is from when it opened; the stored row has the turns since.
        const turns = sessions.find((s) => s.id === info.id)?.turnCount ?? info.turnCount;
        ctx.notify(
          "info",
          [
            `session: ${info.id}`,
            `turns: ${turns}`,
            `model: ${String(info.metadata[METADATA_KEYS.model] ?? opts.defaultModel ?? "echo")}`,
            `persona: ${info.persona ?? "default"}`,
            `started: ${fmtDate(info.createdAt)}`,
            `archived sessions: ${archived}`,
          ].join("\n"),
        );
      },
    },
    setting(
      "model",
      METADATA_KEYS.model,
      (v) => allowedModel(v, opts.modelsAllowed),
      "model",
      opts.modelsAllowed?.length ? ` Allowed: ${opts.modelsAllowed.join(", ")}.` : "",
    ),
    setting("think", METADATA_KEYS.thinkingLevel, parseThinkingLevel, "thinking level"),
    setting("temperature", METADATA_KEYS.temperature, parseTemperature, "temperature"),
    setting("maxtokens", METADATA_KEYS.maxOutputTokens, parseMaxOutputTokens, "max output tokens"),
    {
      name: "persona",
      summary: "set the persona (a named system prompt)",
      usage: "/persona <name>",
      async run(ctx) {
        const name = ctx.args.toLowerCase();
        if (!name) await ctx.can.refresh();
        if (!name || !opts.personas.has(name)) {
          ctx.notify(
            name ? "error" : "info",
            `${name ? `Unknown persona "${name}". ` : `persona: ${ctx.session.info.persona ?? "default"}. `}Available: ${opts.personas.names().join(", ")}.`,
          );
          return;
        }
        await ctx.session.setPersona(name);
        ctx.notify("success", `persona set to ${name}.`);
      },
    },
    {
      name: "sessions",
      summary: "list this chat's sessions, or search them",
      usage: "/sessions [search terms]",
      async run(ctx) {
        const list = await ctx.can.sessions();
        if (!ctx.args) {
          ctx.notify(
            "info",
            list.length ? `${list.map((s, i) => describeSession(s, i, list, ctx.session.id)).join("\n")}\nResume one with /resume <n>.` : "No sessions yet.",
          );
          return;
        }
        // Bounded: SQLite refuses LIKE patterns past a certain complexity, and nobody searches with a novel.
        const terms = ctx.args
          .split(/\s+/)
          .filter(Boolean)
          .slice(0, 8)
          .map((t) => t.slice(0, 100));
        const hits = await opts.transcript.search(
          list.map((s) => s.id),
          terms,
          10,
        );
        ctx.notify(
          "info",
          hits.length
            ? hits.map((h) => `${list.findIndex((s) => s.id === h.sessionId) + 1}. ${h.sessionId}: …${h.snippet}…`).join("\n")
            : `No session of this chat mentions ${terms.join(" ")}.`,
        );
      },
    },
    {
      name: "resume",
      summary: "switch back to an earlier session of this chat",
      usage: "/resume <n|id>",
      async run(ctx) {
        if (!ctx.args) {
          ctx.notify("error", "Usage: /resume <n|id> (see /sessions for the numbers).");
          return;
        }
        let target = ctx.args.split(/\s+/)[0]!;
        if (/^\d{1,4}$/.test(target)) {
          const s = (await ctx.can.sessions())[Number(target) - 1];
          if (!s) {
            ctx.notify("error", `There is no session ${target}; see /sessions.`);
            return;
          }
          target = s.id;
        }
        const r = await ctx.can.switchTo(target);
        if (r.moved) ctx.notify("success", `Resumed session ${r.session.id} (${r.session.turnCount} turns).`);
        else ctx.notify("info", `Already in session ${r.session.id}.`);
      },
    },
    {
      name: "whoami",
      summary: "show who and where you are",
      run(ctx) {
        const o = ctx.event.origin;
        ctx.notify(
          "info",
          [
            `platform: ${o.platform}`,
            `sender: ${o.senderId}${o.senderName ? ` (${o.senderName})` : ""}`,
            `user: ${o.userId ?? "(unknown)"}`,
            `chat: ${o.chatId}${o.threadId ? ` thread ${o.threadId}` : ""}`,
            `session: ${ctx.session.id}`,
          ].join("\n"),
        );
      },
    },
    ...(opts.extra ?? []),
  ];
  const help: CommandSpec = {
    name: "help",
    aliases: ["start"],
    summary: "list the commands",
    run(ctx) {
      const visible = commands.filter((c) => ((c.access ?? "anyone") === "anyone" && !opts.adminCommands?.includes(c.name)) || ctx.event.isAdmin);
      ctx.notify("info", ["Commands:", ...[...visible, help].map((c) => `${c.usage ?? `/${c.name}`} - ${c.summary}`)].join("\n"));
    },
  };
  return [...commands, help];
}

/**
 * The slash-command middleware. It consumes commands (each acts through the
 * context's capabilities and replies with notices) and passes every other
 * message on. A command addressed to another bot (`/cmd@otherbot`) is
 * consumed silently.
 */
export function commandInterceptor(opts: CommandOptions): Interceptor & { commands: CommandSpec[] } {
  const commands = builtinCommands(opts);
  const byName = new Map<string, CommandSpec>();
  for (const c of commands) for (const n of [c.name, ...(c.aliases ?? [])]) byName.set(n, c);
  const admin = new Set(opts.adminCommands ?? []);

  const interceptor: Interceptor = async (event, ctx, next) => {
    const cmd = event.command;
    if (!cmd) return next();
    if (addressedElsewhere(cmd, event.botUsername)) return;
    if (!event.respond && !cmd.target) return next(); // an unaddressed command in a gated group is just context
    const spec = byName.get(cmd.name);
    if (!spec) {
      ctx.notify("warn", `Unknown command /${cmd.name}. Send /help for the list.`);
      return;
    }
    const access = admin.has(spec.name) ? "admin" : (spec.access ?? "anyone");
    if (access === "admin" && !event.isAdmin) {
      ctx.notify("error", `/${spec.name} is for operators only.`);
      return;
    }
    if (spec.cancels) await opts.cancel?.[spec.cancels]?.(ctx.session.id, `/${cmd.name}`);
    await spec.run({ event, session: ctx.session, can: ctx.can, args: cmd.args, name: cmd.name, notify: ctx.notify });
  };
  return Object.assign(interceptor, { commands });
}

export { parseCommand, addressedElsewhere, type ParsedCommand };
