/** The commands that move the conversation between sessions, or stop what runs in it: /new (/reset), /stop, /resume. */
import { isSessionError } from "../../session/errors.js";
import type { CommandContext, CommandOptions, CommandSpec } from "./spec.js";

/** /new [persona] and /reset: a fresh session, compared and rotated against the one the message was bound to. */
async function rotate(opts: Pick<CommandOptions, "personas">, ctx: CommandContext): Promise<void> {
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
}

export function newCommand(opts: Pick<CommandOptions, "personas">): CommandSpec {
  return {
    name: "new",
    aliases: ["reset"],
    summary: "start a fresh session (the old one stays archived)",
    usage: "/new [persona]",
    cancels: "approvals",
    run: (ctx) => rotate(opts, ctx),
  };
}

export const stopCommand: CommandSpec = {
  name: "stop",
  summary: "stop the running answer and drop queued messages",
  cancels: "approvals",
  run(ctx) {
    const { running, dropped } = ctx.can.stop();
    ctx.notify("info", running || dropped ? `Stopped.${dropped ? ` Dropped ${dropped} queued message${dropped === 1 ? "" : "s"}.` : ""}` : "Nothing to stop.");
  },
};

export const resumeCommand: CommandSpec = {
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
};
