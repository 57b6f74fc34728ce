import { randomUUID } from "node:crypto";
import { isAgentError } from "../../agent/types.js";
import { errInfo } from "../../log.js";
import type { Conversation } from "../../runtime/events.js";
import type { Info } from "../../session/info.js";
import { codecs } from "../../store/codecs.js";
import type { JobRecord, JobStore } from "../../store/jobs.js";
import { callPlace, type CallPlace } from "../usage/place.js";
import type { JobRunnerOptions } from "./runner.js";

/**
 * The chat a job's turn is charged to, as a chat turn there is: the address the gateway recorded for the
 * job's conversation (its chat id as messages name it: a Slack channel's "<team>/<channel>", a Discord
 * thread's parent), else the job's own reply address.
 */
export async function placeOfJob(store: Pick<JobStore, "conversationOfBinding">, job: JobRecord): Promise<CallPlace> {
  const recorded = await store.conversationOfBinding(job.conversation);
  if (recorded) return callPlace({ ...recorded, workspace: recorded.template.workspace });
  return callPlace(codecs.jobAddress.decode(job.address, job.id));
}

/**
 * An agent-prompt job's turn: in the job's own session (kind scheduler, made
 * on first use and linked to the conversation's), bounded by the agent
 * timeout. A failure is an error text for the run; a turn abandoned by a stop
 * throws, so nothing is committed and the next start runs the due time again.
 * `inProgress.turns` holds the turn's abort while it runs (a stop aborts them).
 */
export async function schedulerAgentTurn(
  opts: Pick<JobRunnerOptions, "agent" | "registry" | "store" | "agentTimeoutMs" | "log">,
  job: JobRecord,
  conversationSession: Info,
  conversation: Conversation,
  inProgress: { turns: Set<AbortController>; stopped(): boolean },
): Promise<{ text: string; schedulerId: string } | { error: string }> {
  if (!opts.agent) return { error: "no agent is configured for agent-prompt jobs" };
  let scheduler: Info | undefined;
  if (job.sessionId) scheduler = await opts.registry.getUnscoped(job.sessionId).catch(() => undefined);
  // The conversation's agent answers (one chosen with /agent included): a job's session made under another agent is left for a new one.
  if (!scheduler || scheduler.archived || scheduler.agentId !== conversationSession.agentId) {
    // Its own session, of kind scheduler (reflection skips that kind), linked to the conversation.
    scheduler = await opts.registry.ensure({
      agentId: conversationSession.agentId,
      userId: conversation.userId,
      ...(conversation.groupId && { groupId: conversation.groupId }),
      channel: conversation.channel,
      kind: "scheduler",
      createIfMissing: true,
      parentId: conversationSession.id,
      title: `scheduled job ${job.id}`,
    });
    await opts.store.setSession(job.id, scheduler.id);
  }
  // Counted, and limited, like a chat turn in the job's chat: its chat, workspace and platform budgets apply.
  const { agent, system } = opts.agent(scheduler, await placeOfJob(opts.store, job));
  const abort = new AbortController();
  inProgress.turns.add(abort);
  const timer = setTimeout(() => abort.abort(new Error("timeout")), opts.agentTimeoutMs ?? 120_000);
  timer.unref();
  let text = "";
  try {
    for await (const out of agent.run({ system, messages: [{ role: "user", content: job.text }], signal: abort.signal })) {
      if (out.type === "text-delta") text += out.text;
      else if (out.type === "done") {
        text = out.text;
        // Its usage is written before the run is recorded, as a turn's is before its answer.
        await out.settled;
      }
    }
  } catch (err) {
    // Abandoned by a stop: commit nothing, so the claim goes stale and the next start runs it again.
    if (inProgress.stopped()) throw err;
    // A used-up budget (issue 29) is the run's error as the user would read it: which budget, when it resets.
    if (isAgentError(err, "Budget")) return { error: err.message };
    const ref = randomUUID().slice(0, 6);
    opts.log.warn({ jobId: job.id, ref, err: errInfo(err) }, "a scheduled job's agent turn failed");
    return {
      error: abort.signal.aborted
        ? `the agent did not answer within ${Math.round((opts.agentTimeoutMs ?? 120_000) / 1000)} s`
        : `the agent failed (ref ${ref}; see the log)`,
    };
  } finally {
    clearTimeout(timer);
    inProgress.turns.delete(abort);
  }
  if (!text.trim()) return { error: "the agent gave an empty answer" };
  return { text, schedulerId: scheduler.id };
}
