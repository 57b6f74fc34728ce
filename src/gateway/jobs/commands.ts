import { z } from "zod";
import { bindingAgentIdOf } from "../../session/agent-id.js";
import { badArgs, type Tool } from "../../agent/tools.js";
import type { CommandContext, CommandSpec } from "../../runtime/commands/index.js";
import { formatLocal, isTimeZone, parseWhen, TimingError } from "../../runtime/jobs/when.js";
import type { Info } from "../../session/info.js";
import { describeJob, type JobService } from "./service.js";

/**
 * The chat's side of scheduled jobs: `/remind <when> <text>`, `/schedule`
 * (the chat's jobs with their last run and status), `/schedule cancel <n>`
 * and `/tz <zone>`. A reminder targets the chat's binding, so it follows /new.
 */
export function jobCommands(jobs: JobService): CommandSpec[] {
  return [
    {
      name: "remind",
      summary: "send a message here later: /remind in 10m stretch",
      usage: "/remind <in 10m | at 18:00 | tomorrow 9:00 | 2027-01-05T09:00 | every 1d | cron 0 9 * * 1-5> <text>",
      run: (ctx) => remind(jobs, ctx),
    },
    {
      name: "schedule",
      summary: "this chat's scheduled messages; /schedule cancel <n>",
      usage: "/schedule [cancel <n>]",
      run: (ctx) => listOrCancel(jobs, ctx),
    },
    { name: "tz", summary: "this chat's time zone for /remind (e.g. /tz Europe/Paris)", usage: "/tz <IANA zone>", run: (ctx) => setTimezone(jobs, ctx) },
  ];
}

/** `/remind <when> <text>`: a job that sends the text into this chat's binding then (or every so often). */
async function remind(jobs: JobService, ctx: CommandContext): Promise<void> {
  const { event } = ctx;
  const tz = await jobs.timezoneOf(event.conversation);
  const when = parseWhen(ctx.args, tz, jobs.now());
  if ("error" in when) {
    ctx.notify("error", `${when.error} Usage: /remind in 10m stretch your legs`);
    return;
  }
  if (!when.rest.trim()) {
    ctx.notify("error", "What should I say then? Usage: /remind in 10m stretch your legs");
    return;
  }
  try {
    const job = await jobs.create({
      target: { conversation: event.conversation, address: event.replyTo },
      timing: when.timing,
      action: "text",
      text: when.rest,
      createdBy: `chat:${event.origin.platform}:${event.origin.senderId}`,
    });
    ctx.notify(
      "success",
      `Scheduled (${job.n}): ${job.schedule.description}${job.nextRunAt && job.schedule.kind !== "once" ? `, first ${formatLocal(new Date(job.nextRunAt), tz)}` : ""}. /schedule lists this chat's jobs.`,
    );
  } catch (e) {
    if (!(e instanceof TimingError)) throw e;
    ctx.notify("error", e.message);
  }
}

/** `/schedule`: the chat's jobs with their last run and status; `/schedule cancel <n>` cancels one. */
async function listOrCancel(jobs: JobService, ctx: CommandContext): Promise<void> {
  const { event } = ctx;
  const [sub, arg] = ctx.args.trim().split(/\s+/);
  if (sub === "cancel") {
    const n = Number(arg);
    if (!Number.isInteger(n) || n < 1) {
      ctx.notify("error", "Usage: /schedule cancel <n>, with the number /schedule shows.");
      return;
    }
    const cancelled = await jobs.cancelInChat(event.conversation, n);
    ctx.notify(
      cancelled ? "success" : "error",
      cancelled ? `Cancelled ${n}: ${cancelled.text}` : `There is no scheduled job ${n} in this chat; /schedule lists them.`,
    );
    return;
  }
  if (sub) {
    ctx.notify("error", "Usage: /schedule to list this chat's jobs, /schedule cancel <n> to cancel one.");
    return;
  }
  const list = await jobs.listChat(event.conversation);
  ctx.notify("info", list.length ? list.map(describeJob).join("\n") : "No scheduled messages in this chat. Make one with /remind in 10m <text>.");
}

/** `/tz <zone>`: the time zone /remind reads times in, per chat. */
async function setTimezone(jobs: JobService, ctx: CommandContext): Promise<void> {
  const { event } = ctx;
  const tz = ctx.args.trim();
  if (!tz) {
    ctx.notify("info", `This chat's time zone: ${await jobs.timezoneOf(event.conversation)}. Usage: /tz Europe/Paris`);
    return;
  }
  if (!isTimeZone(tz)) {
    ctx.notify("error", `Unknown time zone "${tz.slice(0, 64)}": use an IANA name such as Europe/Paris, America/New_York or UTC.`);
    return;
  }
  await jobs.setTimezone(event.conversation, tz);
  ctx.notify("success", `Time zone set to ${tz}. Reminders made from now on read times in it.`);
}

// Built once: the tool itself is built for every turn.
const ScheduleMessageArgs = z.object({
  when: z.string().trim().min(1).max(200),
  text: z.string().trim().min(1).max(4000),
  mode: z.enum(["text", "agent"]).default("text"),
});

/**
 * The agent's `schedule_message` tool: the agent schedules a message (or a
 * prompt for a later turn of its own) into the conversation it is talking in.
 * Under the tool approval policy; by default it asks.
 */
export function scheduleMessageTool(jobs: JobService, session: Info): Tool {
  return {
    name: "schedule_message",
    description:
      "Schedules a message into this conversation. `when` is like a chat reminder: 'in 10m', 'at 18:00', 'tomorrow 9:00', an ISO time, 'every 1d' or 'cron 0 9 * * 1-5' (read in the chat's time zone). mode 'text' sends the text as it is; 'agent' runs it as a prompt then and sends your answer.",
    parameters: {
      type: "object",
      properties: {
        when: { type: "string", description: "When to send it, e.g. 'in 2h' or 'tomorrow 9:00'." },
        text: { type: "string", description: "The message (mode text) or the prompt (mode agent)." },
        mode: { type: "string", enum: ["text", "agent"], description: "text (default) or agent." },
      },
      required: ["when", "text"],
      additionalProperties: false,
    },
    policy: "ask",
    async run(args) {
      const parsed = ScheduleMessageArgs.safeParse(args);
      if (!parsed.success) return badArgs("schedule_message", parsed.error);
      if (session.kind !== "chat") return "error: schedule_message works only in a chat conversation.";
      const conversation = {
        agentId: bindingAgentIdOf(session),
        userId: session.userId,
        ...(session.groupId && { groupId: session.groupId }),
        channel: session.channel,
      };
      const tz = await jobs.timezoneOf(conversation);
      const when = parseWhen(`${parsed.data.when} x`, tz, jobs.now());
      if ("error" in when) return `error: ${when.error}`;
      if (when.rest.trim() !== "x") return `error: could not read "${parsed.data.when}" as a time; use e.g. 'in 10m' or 'tomorrow 9:00'.`;
      try {
        const target = await jobs.locate({ sessionId: session.id });
        const job = await jobs.create({ target, timing: when.timing, action: parsed.data.mode, text: parsed.data.text, createdBy: "agent" });
        return `scheduled ${job.id}: ${job.schedule.description}; next ${job.nextRunAt ? formatLocal(new Date(job.nextRunAt), tz) : "never"}`;
      } catch (e) {
        return `error: ${(e as Error).message}`;
      }
    },
  };
}
