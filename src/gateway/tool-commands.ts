/**
 * The chat's side of the tools and approvals (moved out of tooling.ts, which
 * builds the tools and shows the cards): the `/approve <id>` and `/deny <id>`
 * middleware ahead of the commands, and the `/tools` and `/deny` commands.
 */
import type { AgentToolRules } from "../agent/agent-tools.js";
import type { Tool, ToolRegistry } from "../agent/tools.js";
import { APPROVAL_ID, type ApprovalService } from "../runtime/approvals/service.js";
import { addressedElsewhere, type CommandSpec } from "../runtime/commands/index.js";
import type { Interceptor } from "../runtime/interceptors.js";
import type { Info } from "../session/info.js";
import type { Tooling } from "./tooling.js";

/**
 * Ahead of the commands: `/approve <id>` and `/deny <id>` for an approval
 * (the text fallback of the buttons; a pairing code goes on to /approve).
 * What /stop and /new cancel is in their specs (CommandSpec.cancels).
 */
export function approvalIdInterceptor(approvals: ApprovalService): Interceptor {
  return async (event, ctx, next) => {
    const cmd = event.command;
    // `/deny@otherbot <id>` is another bot's: the commands' interceptor drops it unanswered.
    if (!cmd || addressedElsewhere(cmd, event.botUsername)) return next();
    if ((cmd.name === "approve" || cmd.name === "deny") && APPROVAL_ID.test(cmd.args.toLowerCase())) {
      const r = await approvals.click({
        id: cmd.args.toLowerCase(),
        action: cmd.name,
        platform: event.origin.platform,
        botId: event.replyTo.botId,
        chatId: event.replyTo.chatId,
        senderId: event.origin.senderId,
        ...(event.origin.senderName && { senderName: event.origin.senderName }),
        isAdmin: event.isAdmin ?? false,
      });
      // A pairing code that happens to look like an id is still a pairing code for an operator.
      if (!r.ok && cmd.name === "approve" && event.isAdmin && /^There is no approval/.test(r.text)) return next();
      ctx.notify(r.ok ? "success" : "error", r.text);
      return;
    }
    return next();
  };
}

/**
 * `/tools`: the tools a turn in this session is offered (`offered`, the
 * same registry the turn's agent gets, so the list cannot drift from what
 * the model sees), each with its policy here; every MCP server's state,
 * with the tools of one not ready marked unavailable. `/deny <id>`.
 */
export function toolCommands(
  tooling: Pick<Tooling, "agentPolicyOf" | "status">,
  offered: (session: Info) => ToolRegistry,
  /** The session's agent's tool rules (AGENTS_CONFIG): its policies, and the servers it may use. */
  rulesOf?: (session: Info) => AgentToolRules,
): CommandSpec[] {
  return [
    {
      name: "tools",
      summary: "list the agent's tools, their status and policy here",
      run: (ctx) => {
        const chat = { platform: ctx.event.replyTo.platform, chatId: ctx.event.replyTo.chatId };
        const tools = offered(ctx.session.info).list();
        const names = new Set(tools.map((t) => t.name));
        const rules = rulesOf?.(ctx.session.info);
        const policy = (t: Tool | undefined, name: string) => tooling.agentPolicyOf(t, name, chat, rules?.policyOf);
        const lines: string[] = [];
        for (const t of tools) if (!t.server) lines.push(`${t.name} (built-in): ${policy(t, t.name)}`);
        // A server this agent may not use is none of its business.
        const servers = tooling.status().filter((s) => !rules || rules.usesServer(s.name));
        for (const s of servers) {
          const state = s.state === "ready" ? "ready" : `${s.state}${s.error ? `: ${s.error}` : ""}`;
          lines.push(`server ${s.name} (${s.transport}): ${state}${s.restarts ? `, ${s.restarts} restart(s)` : ""}`);
          for (const tool of s.tools) {
            const name = `${s.name}__${tool}`;
            if (rules && !rules.offers({ name, server: s.name })) continue;
            lines.push(`  ${name}: ${policy(undefined, name)}${s.state === "ready" && names.has(name) ? "" : " (unavailable)"}`);
          }
          if (s.tools.length === 0) lines.push("  (no tools listed yet)");
        }
        ctx.notify(
          "info",
          lines.length
            ? `Tools:\n${lines.join("\n")}`
            : "The agent is offered no tools here: with no model configured (the echo agent) or TOOL_MAX_ROUNDS=0 it calls none.",
        );
      },
    },
    {
      name: "deny",
      summary: "deny a tool call waiting for approval",
      usage: "/deny <id>",
      // Reached only when the id is unknown here (the interceptor decides known ones).
      run: (ctx) => ctx.notify("error", ctx.args ? `There is no approval ${ctx.args} in this chat.` : "Usage: /deny <id> (the id is on the approval card)."),
    },
  ];
}
