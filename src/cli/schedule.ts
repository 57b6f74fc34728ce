import type { Config } from "../config.js";
import { describeJob, JobService, type ConversationRef } from "../gateway/jobs/service.js";
import { parseAt, parseDuration, TimingError, type Timing } from "../runtime/jobs/when.js";
import { Registry } from "../session/registry.js";
import type { Database } from "../store/db.js";
import { IdentityStore } from "../store/identities.js";
import { JobStore } from "../store/jobs.js";
import { KvStore } from "../store/kv.js";
import { SessionStore } from "../store/sessions.js";
import { CliError, usageError, type Output } from "./output.js";

export interface ScheduleOptions {
  session?: string;
  platform?: string;
  chat?: string;
  thread?: string;
  bot?: string;
  at?: string;
  in?: string;
  every?: string;
  cron?: string;
  tz?: string;
  text?: string;
  action?: string;
  all?: boolean;
}

const ADD_USAGE =
  "schedule add (--session <id> | --platform <p> --chat <id> [--thread <id>] [--bot <id>]) (--at <ISO> | --in 10m | --every 1h | --cron '0 9 * * 1-5') [--tz Europe/Paris] [--action text|agent] --text <text>";

/** `switchboard schedule add | list | cancel <id>`. */
export async function scheduleCommand(
  db: Database,
  config: Config,
  sub: string | undefined,
  arg: string | undefined,
  o: ScheduleOptions,
  out: Output,
): Promise<number> {
  const jobs = new JobService({
    store: new JobStore(db),
    registry: new Registry(new SessionStore(db)),
    kv: new KvStore(db),
    identities: new IdentityStore(db),
    defaultTimezone: config.DEFAULT_TIMEZONE,
  });
  if (sub === "list") {
    const list = await jobs.list({ all: o.all });
    return out.ok(
      { jobs: list },
      list.length
        ? list.map(
            (j) => `${j.id}  ${j.conversation.platform}:${j.conversation.chat}${j.conversation.thread ? `:${j.conversation.thread}` : ""}  ${describeJob(j)}`,
          )
        : ["No scheduled jobs."],
    );
  }
  if (sub === "cancel") {
    if (!arg) throw usageError("schedule cancel needs a job id: switchboard schedule cancel <id> (schedule list shows them)");
    const job = await jobs.cancel(arg);
    return out.ok(job, [`Cancelled ${job.id}.`]);
  }
  if (sub === "add") {
    const ref: ConversationRef | undefined = o.session
      ? { sessionId: o.session }
      : o.platform && o.chat
        ? { platform: o.platform, chat: o.chat, ...(o.thread && { thread: o.thread }), ...(o.bot && { bot: o.bot }) }
        : undefined;
    if (!ref) throw usageError(`schedule add needs a conversation: --session <id>, or --platform and --chat. ${ADD_USAGE}`);
    const whens = [o.at, o.in, o.every, o.cron].filter((v) => v !== undefined);
    if (whens.length !== 1) throw usageError(`schedule add needs exactly one of --at, --in, --every or --cron. ${ADD_USAGE}`);
    if (!o.text) throw usageError(`schedule add needs --text. ${ADD_USAGE}`);
    const action = o.action ?? "text";
    if (action !== "text" && action !== "agent") throw usageError(`--action must be text or agent (got "${action}")`);
    const target = await jobs.locate(ref);
    const timezone = o.tz ?? (await jobs.timezoneOf(target.conversation));
    let timing: Timing;
    try {
      if (o.at !== undefined) timing = parseAt(o.at, timezone, jobs.now());
      else if (o.in !== undefined) {
        const ms = parseDuration(o.in);
        if (ms === undefined) throw new TimingError(`--in "${o.in}" is not a duration (e.g. 10m, 2h, 1d)`);
        timing = { kind: "once", spec: new Date(jobs.now().getTime() + ms).toISOString(), timezone };
      } else if (o.every !== undefined) {
        const ms = parseDuration(o.every);
        if (ms === undefined) throw new TimingError(`--every "${o.every}" is not an interval (e.g. 30m, 1d)`);
        timing = { kind: "every", spec: String(ms), timezone };
      } else timing = { kind: "cron", spec: o.cron!, timezone };
      const job = await jobs.create({ target, timing, action, text: o.text, createdBy: "cli" });
      return out.ok(job, [`Scheduled ${job.id}: ${describeJob({ ...job, n: undefined })}`]);
    } catch (e) {
      if (e instanceof TimingError) throw new CliError("Invalid", e.message);
      throw e;
    }
  }
  throw usageError(sub ? `unknown schedule command "${sub}"` : "schedule needs a command: add, list or cancel <id>");
}
