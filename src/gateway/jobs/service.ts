import { randomUUID } from "node:crypto";
import { SwitchboardError } from "../../errors.js";
import { KeyedQueue } from "../../keyed-queue.js";
import type { Place, RoutedAgent } from "../../agent/routing.js";
import { DEFAULT_AGENT } from "../../config/agents.js";
import { agentIdFor, bindingAgentIdOf } from "../../session/agent-id.js";
import type { Conversation, ReplyAddress } from "../../runtime/events.js";
import { checkTiming, checkTimeZone, describeTiming, formatLocal, nextAfter, TimingError, type Timing } from "../../runtime/jobs/when.js";
import type { Registry } from "../../session/registry.js";
import { errors } from "../../session/errors.js";
import { codecs, type ConversationTemplate } from "../../store/codecs.js";
import type { IdentityStore } from "../../store/identities.js";
import type { JobRecord, JobStore, RecordedConversation } from "../../store/jobs.js";
import type { KvStore } from "../../store/kv.js";

/** Where a job's messages go: the conversation's binding coordinates (so it follows /new) and its reply address. */
export interface JobTarget {
  conversation: Conversation;
  address: ReplyAddress;
}

/** How the CLI and the HTTP API name a conversation: any of its sessions, or the platform's chat. */
export type ConversationRef = { sessionId: string } | { platform: string; chat: string; thread?: string; bot?: string };

/** A chat named without `bot` where several bots of its platform have talked: the caller must name one (the HTTP API answers 409). */
export class AmbiguousChatError extends SwitchboardError<"Invalid"> {
  override readonly name = "AmbiguousChatError";
  constructor(message: string) {
    super("Invalid", message);
  }
}

export interface NewJobInput {
  target: JobTarget;
  timing: Timing;
  action: "text" | "agent";
  text: string;
  /** Who made it: chat:<platform>:<user>, cli, agent, or api:<token name>. */
  createdBy: string;
  /** The HTTP API token (its name) that made it: without the admin scope, only that token sees it. */
  principal?: string;
}

/**
 * Whose jobs a caller may see and cancel: `all` (the CLI, an API token with
 * the admin scope) or only those one API token made. A job made in chat, by
 * the agent or the CLI is no token's.
 */
export type JobScope = { all: true } | { principal: string };

/** A job as the CLI, the API and /schedule show it. */
export interface JobView {
  id: string;
  /** Its number among its chat's open jobs (what /schedule cancel <n> takes). */
  n?: number;
  conversation: { platform: string; botId: string; chat: string; thread?: string };
  schedule: { kind: string; spec: string; timezone: string; description: string };
  action: string;
  text: string;
  status: string;
  nextRunAt: string | null;
  lastRunAt: string | null;
  lastStatus: string | null;
  lastError: string | null;
  failures: number;
  createdBy: string;
  createdAt: string;
}

export const MAX_JOB_TEXT = 4000;
/** A chat may hold this many open jobs. */
export const MAX_JOBS_PER_CHAT = 50;

export function viewOf(job: JobRecord, n?: number): JobView {
  const a = codecs.jobAddress.decode(job.address, job.id);
  return {
    id: job.id,
    ...(n !== undefined && { n }),
    conversation: { platform: a.platform, botId: a.botId, chat: a.chatId, ...(a.threadId && { thread: a.threadId }) },
    schedule: {
      kind: job.kind,
      spec: job.spec,
      timezone: job.timezone,
      description: describeTiming({ kind: job.kind as Timing["kind"], spec: job.spec, timezone: job.timezone }),
    },
    action: job.action,
    text: job.text,
    status: job.status,
    nextRunAt: job.nextRunAt?.toISOString() ?? null,
    lastRunAt: job.lastRunAt?.toISOString() ?? null,
    lastStatus: job.lastStatus,
    lastError: job.lastError,
    failures: job.failures,
    createdBy: job.createdBy,
    createdAt: job.createdAt.toISOString(),
  };
}

/** One line of /schedule and `schedule list`. */
export function describeJob(v: JobView): string {
  const next = v.nextRunAt ? `next ${formatLocal(new Date(v.nextRunAt), v.schedule.timezone)}` : "no next run";
  const last = v.lastStatus
    ? `; last ${v.lastRunAt ? formatLocal(new Date(v.lastRunAt), v.schedule.timezone) : "run"}: ${v.lastStatus}${v.lastError ? ` (${v.lastError})` : ""}`
    : "";
  const what = v.action === "agent" ? `ask the agent: ${v.text}` : v.text;
  return `${v.n !== undefined ? `${v.n}. ` : ""}${v.schedule.description}, ${v.status}, ${next}${last}: ${what.length > 80 ? `${what.slice(0, 79)}…` : what}`;
}

/**
 * Creating, listing and cancelling jobs, from chat, the CLI, the agent's tool
 * and the HTTP API alike. A job is stored with its conversation's binding key
 * and coordinates: at each run the binding is resolved again, so a /new moves
 * the job along to the fresh session.
 */
export interface JobServiceDeps {
  store: JobStore;
  registry: Registry;
  kv: KvStore;
  identities: IdentityStore;
  defaultTimezone: string;
  now?: () => Date;
  /** AGENTS_CONFIG's routes (src/agent/routing.ts): the agent of a job's place, part of its binding. Absent: `default`. */
  agents?: { route(place: Place): RoutedAgent };
}

export class JobService {
  /** Creations per conversation, one at a time: the per-chat cap is a count then an insert. */
  readonly #creating = new KeyedQueue<string>();

  constructor(readonly deps: JobServiceDeps) {}

  get store(): JobStore {
    return this.deps.store;
  }

  now(): Date {
    return this.deps.now?.() ?? new Date();
  }

  keyOf(conversation: Conversation): string {
    return this.deps.registry.bindingKey(conversation);
  }

  /** The chat's time zone (/tz), else DEFAULT_TIMEZONE. */
  async timezoneOf(conversation: Conversation): Promise<string> {
    return (await this.deps.kv.get(`tz:${this.keyOf(conversation)}`)) ?? this.deps.defaultTimezone;
  }

  async setTimezone(conversation: Conversation, tz: string): Promise<void> {
    await this.deps.kv.set(`tz:${this.keyOf(conversation)}`, checkTimeZone(tz));
  }

  async create(input: NewJobInput): Promise<JobView> {
    const text = input.text.trim();
    if (!text) throw new TimingError(input.action === "agent" ? "Give the prompt the agent should answer." : "Give the text to send.");
    if (text.length > MAX_JOB_TEXT) throw new TimingError(`The text is too long (${text.length} characters; at most ${MAX_JOB_TEXT}).`);
    const timing = checkTiming(input.timing);
    const now = this.now();
    const first = timing.kind === "once" ? new Date(timing.spec) : nextAfterNow(timing, now);
    if (timing.kind === "once" && first.getTime() <= now.getTime()) throw new TimingError(`${timing.spec} is in the past; give a time in the future.`);
    const conversation = this.keyOf(input.target.conversation);
    // Concurrent creations (API requests, the agent's tool, chat) would all count below the cap and all insert.
    return this.#creating.run(conversation, () => this.#insert(input, timing, first, conversation));
  }

  async #insert(input: NewJobInput, timing: Timing, first: Date, conversation: string): Promise<JobView> {
    const text = input.text.trim();
    const open = await this.deps.store.list({ conversation, open: true, limit: MAX_JOBS_PER_CHAT + 1 });
    if (open.length >= MAX_JOBS_PER_CHAT)
      throw new TimingError(`This chat already has ${open.length} scheduled jobs (at most ${MAX_JOBS_PER_CHAT}); cancel some first.`);
    const { replyToMessageId: _quote, ...address } = input.target.address;
    const job = await this.deps.store.insert({
      id: randomUUID(),
      conversation,
      target: codecs.jobTarget.encode(input.target.conversation),
      address: codecs.jobAddress.encode(address),
      platform: address.platform,
      botId: address.botId,
      kind: timing.kind,
      spec: timing.spec,
      timezone: timing.timezone,
      action: input.action,
      text,
      status: "active",
      nextRunAt: first,
      createdBy: input.createdBy,
      principal: input.principal ?? null,
    });
    return viewOf(job, open.length + 1);
  }

  /** The open jobs of one chat, numbered as /schedule shows them. */
  async listChat(conversation: Conversation): Promise<JobView[]> {
    const rows = await this.deps.store.list({ conversation: this.keyOf(conversation), open: true });
    return rows.map((j, i) => viewOf(j, i + 1));
  }

  async list(opts: { all?: boolean; limit?: number; scope?: JobScope } = {}): Promise<JobView[]> {
    const principal = opts.scope && "principal" in opts.scope ? opts.scope.principal : undefined;
    return (await this.deps.store.list({ open: !opts.all, limit: opts.limit, principal })).map((j) => viewOf(j));
  }

  /** A job by id. NotFound if there is none, or if `scope` may not see it (the same answer: no existence oracle). */
  async get(id: string, scope: JobScope = { all: true }): Promise<JobView> {
    return viewOf(await this.#visible(id, scope));
  }

  /** Cancels a job by id. NotFound if there is none (or `scope` may not see it); Invalid if it is no longer open. */
  async cancel(id: string, scope: JobScope = { all: true }): Promise<JobView> {
    const job = await this.#visible(id, scope);
    const principal = "principal" in scope ? scope.principal : undefined;
    if (!(await this.deps.store.cancel(id, principal))) throw errors.invalid(`Job ${id} is ${job.status}; only active and paused jobs can be cancelled.`);
    return viewOf((await this.deps.store.get(id))!);
  }

  async #visible(id: string, scope: JobScope): Promise<JobRecord> {
    const job = await this.deps.store.get(id);
    if (!job || ("principal" in scope && job.principal !== scope.principal)) throw errors.notFound(`Job ${id}`, { jobId: id });
    return job;
  }

  /** /schedule cancel <n>: the chat's n-th open job. */
  async cancelInChat(conversation: Conversation, n: number): Promise<JobView | undefined> {
    const job = (await this.listChat(conversation))[n - 1];
    if (!job) return undefined;
    return (await this.deps.store.cancel(job.id)) ? { ...job, status: "cancelled" } : undefined;
  }

  /**
   * The conversation a CLI or API caller names, and where its messages go:
   * the conversation's address as the gateway recorded it (ConversationAddress),
   * so a job can only be made for a chat the bot has talked in.
   */
  async locate(ref: ConversationRef): Promise<JobTarget> {
    if ("sessionId" in ref) {
      const info = await this.deps.registry.getUnscoped(ref.sessionId);
      if (info.kind !== "chat") throw errors.invalid(`Session ${info.id} is a ${info.kind} session; name a chat's session.`);
      const conversation: Conversation = {
        agentId: bindingAgentIdOf(info),
        userId: info.userId,
        ...(info.groupId && { groupId: info.groupId }),
        channel: info.channel,
      };
      const found = await this.deps.store.conversationOfBinding(this.keyOf(conversation));
      if (!found) throw errors.notFound(`A reply address for session ${info.id} (the chat has no recorded message yet; send one first)`);
      return { conversation, address: addressOf(found.template) };
    }
    const where = `${ref.platform} chat ${ref.chat}${ref.thread ? ` (thread ${ref.thread})` : ""}${ref.bot ? ` with bot ${ref.bot}` : ""}`;
    const rows = await this.deps.store.conversationsIn(ref.platform, ref.chat, ref.thread, ref.bot);
    const bots = [...new Set(rows.map((r) => r.botId))];
    // As the messages API does: never pick one of several bots (the latest to speak) for the caller.
    if (bots.length > 1)
      throw new AmbiguousChatError(`several bots are in ${where}: name one (conversation.bot over HTTP, --bot in the CLI): ${bots.slice(0, 5).join(", ")}`);
    const found: RecordedConversation | undefined = rows[0];
    if (!found) throw errors.notFound(`A ${where} the bot has talked in`);
    return { conversation: await this.#coordinates(found), address: addressOf(found.template) };
  }

  /** A recorded conversation's binding coordinates: its person's, or its group's (a thread's own group when its binding is not the channel's). */
  async #coordinates(c: RecordedConversation): Promise<Conversation> {
    const { identities } = this.deps;
    const { platform, botId, chatId, threadId, template: t } = c;
    // The place's routed agent, as a message there gets it; a group's job has no sender, so a sender's rule does not apply.
    const place = {
      platform,
      chatId,
      ...(t.replyTo.chatId !== chatId && { replyChatId: t.replyTo.chatId }),
      chatKind: t.chatKind,
      senderId: t.chatKind === "private" ? (t.senderId ?? "") : "",
      ...(threadId && { threadId }),
      ...(t.workspace !== undefined && { workspace: t.workspace }),
    };
    const agentId = agentIdFor(botId, this.deps.agents?.route(place).agent ?? DEFAULT_AGENT);
    if (t.chatKind === "private") {
      if (!t.senderId) throw errors.notFound(`The person of ${platform} chat ${chatId} (its recorded address names none; send a message there first)`);
      return { agentId, userId: await identities.userId(platform, t.senderId), channel: t.channel };
    }
    const parent = await identities.groupId(platform, chatId);
    const shared: Conversation = { agentId, userId: parent, groupId: parent, channel: t.channel };
    if (t.chatKind !== "thread" || !threadId || this.keyOf(shared) === c.bindingKey) return shared;
    const own = await identities.groupId(platform, `${chatId}:thread:${threadId}`, { parentId: parent });
    return { agentId, userId: own, groupId: own, channel: t.channel };
  }
}

/** Where a conversation's job messages go: its recorded reply address, quoting nothing. */
const addressOf = (t: ConversationTemplate): ReplyAddress => ({
  ...t.replyTo,
  replyToMessageId: undefined,
  kind: t.chatKind === "private" ? "private" : "group",
});

function nextAfterNow(timing: Timing, now: Date): Date {
  if (timing.kind === "every") return new Date(now.getTime() + Number(timing.spec));
  const next = nextAfter(timing, now);
  if (!next) throw new TimingError(`"${timing.spec}" never runs again.`);
  return next;
}
