/**
 * `/agent`: the agent of this conversation, and `/agent <name>` to switch to
 * another one the place's route lets users here choose (issue 29). A switch
 * is a compare-and-rotate like `/new`: the binding (still keyed by the
 * routed agent) moves onto a fresh session of the chosen agent, the old one
 * stays archived and listed. Of several `/agent <name>` sent at once, one
 * rotates; every other asker is told it already switched.
 */
import type { AgentCatalog, CatalogAgent } from "../agent/catalog.js";
import type { CommandContext, CommandSpec } from "../runtime/commands/spec.js";
import { agentIdFor, agentNameOf, botOfAgentId } from "../session/agent-id.js";
import { isSessionError } from "../session/errors.js";

function describe(agent: CatalogAgent): string {
  const model = agent.spec.model ?? (agent.factory.provider === "echo" ? "echo" : "the gateway's default");
  return `${agent.name} (model ${model})${agent.spec.description ? `: ${agent.spec.description}` : ""}`;
}

/** The agents a user here may choose: the event's list (the routed agent first), known to the catalog. */
function choosable(ctx: CommandContext, agents: AgentCatalog): string[] {
  const routed = agentNameOf(ctx.event.conversation.agentId);
  return [...new Set([routed, ...(ctx.event.choosableAgents ?? [])])].filter((n) => agents.get(n) !== undefined);
}

const nameIn = (args: string) => args.trim().split(/\s+/)[0]?.toLowerCase() ?? "";
const targetOf = (ctx: CommandContext, name: string) => agentIdFor(botOfAgentId(ctx.event.conversation.agentId), name);

function show(ctx: CommandContext, agents: AgentCatalog): void {
  const here = agents.of(ctx.session.info.agentId);
  const names = choosable(ctx, agents);
  const others = names.filter((n) => n !== here.name);
  ctx.notify(
    "info",
    [
      `agent: ${describe(here)}`,
      others.length
        ? `You can switch to: ${others.map((n) => describe(agents.get(n)!)).join("; ")}. Send /agent <name>.`
        : "No other agent can be chosen here.",
    ].join("\n"),
  );
}

async function switchTo(ctx: CommandContext, agents: AgentCatalog, name: string): Promise<void> {
  const names = choosable(ctx, agents);
  if (!names.includes(name)) {
    // The same answer for an agent that exists elsewhere and one that does not: a chat learns nothing about other places' agents.
    ctx.notify("error", `"${name}" cannot be chosen here. ${names.length > 1 ? `Choose one of: ${names.join(", ")}.` : "This chat has one agent."}`);
    return;
  }
  const { session, can, event } = ctx;
  const target = targetOf(ctx, name);
  if (session.info.agentId === target) {
    ctx.notify("info", `This chat already runs with ${name}.`);
    return;
  }
  // Ordered like /new: what was sent before it is answered first, by the agent it was sent to.
  await can.whenIdle();
  const expected = event.boundSessionId ?? session.id;
  try {
    const current = await can.rotate({ expectedSessionId: expected, reason: "new", agentId: target });
    ctx.notify("success", `Switched to ${name}, in a fresh session (the one before is kept: /sessions). session: ${current.id}`);
  } catch (e) {
    if (isSessionError(e, "StaleRotation")) {
      ctx.notify("info", "This chat already switched: send /agent to see which agent it runs with.");
      return;
    }
    if (!isSessionError(e, "RotationOutcomeUnknown")) throw e;
    const verdict = await can.verifyRotation(expected);
    if (verdict === "Committed") {
      const current = await can.followBinding(expected);
      ctx.notify("success", `Switched to ${agentNameOf(current.agentId)}. session: ${current.id}`);
    } else if (verdict === "NotExecuted") ctx.notify("error", `Could not switch (the database did not confirm it). Please send /agent ${name} again.`);
    else ctx.notify("warn", "It is not certain whether the chat switched. Send /agent to check.");
  }
}

export function agentCommand(agents: AgentCatalog): CommandSpec {
  return {
    name: "agent",
    summary: "show this chat's agent, or switch to another one allowed here",
    usage: "/agent [name]",
    // Switching waits for the session to be idle, which a turn held by an approval never is (as with /new); showing cancels nothing.
    // Only a switch that will happen cancels: a refused name changes nothing here (and so tells nothing about other places' agents).
    cancels: (ctx) => {
      const name = nameIn(ctx.args);
      const moves = name !== "" && choosable(ctx, agents).includes(name) && ctx.session.info.agentId !== targetOf(ctx, name);
      return moves ? "approvals" : undefined;
    },
    async run(ctx) {
      const name = nameIn(ctx.args);
      if (!name) return show(ctx, agents);
      return switchTo(ctx, agents, name);
    },
  };
}
