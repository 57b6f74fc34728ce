/**
 * The agent's tools for each turn, and who may let them run: the built-in
 * tools, the MCP servers (MCP_CONFIG), each tool's policy in the asking chat,
 * and approvals on the chat's own buttons (src/runtime/approvals). The app
 * composes it; adapters draw the cards and report the clicks.
 */
import { toolRegistry, type Tool, type ToolRegistry } from "../agent/tools.js";
import { resolvePolicy, type PolicyChat, type ToolPolicy } from "../agent/tool-policy.js";
import { loadMcpConfig, type McpConfig } from "../agent/mcp/config.js";
import type { McpHub, ServerStatus } from "../agent/mcp/hub.js";
import type { Logger } from "../log.js";
import { ApprovalService, APPROVAL_ID, type ApprovalServiceOptions, type Approvers } from "../runtime/approvals/service.js";
import type { ApprovalCard } from "../runtime/approvals/card.js";
import type { CommandSpec } from "../runtime/commands/index.js";
import { parseCommand } from "../runtime/commands/parse.js";
import type { ReplyAddress } from "../runtime/events.js";
import type { AgentContext, Interceptor } from "../runtime/runner.js";
import type { ApprovalHandler } from "../agent/tools.js";
import type { ApprovalStore } from "../store/approvals.js";
import type { KvStore } from "../store/kv.js";
import type { Info } from "../session/info.js";

export interface ToolingOptions {
  mcpConfigPath?: string;
  /** Instead of a file (tests). */
  mcpConfig?: McpConfig;
  approvers: Approvers;
  /** Whether a sender passes the DM policy, so may decide a tool call (ApprovalServiceOptions.mayApprove). */
  mayApprove: ApprovalServiceOptions["mayApprove"];
  approvalTimeoutMs: number;
  toolTimeoutMs: number;
  store: ApprovalStore;
  kv: KvStore;
  owner: string;
  shared: boolean;
  log: Logger;
  /** The outbound door (src/gateway/outbound), where cards go out. */
  outbound: () => CardDoor;
  onDecision?: (status: string) => void;
}

/** What approvals enqueue on the outbound door (src/gateway/outbound/items.ts): a card, resolving to its message id, and its edit. */
export interface CardDoor {
  enqueue(item: { kind: "card"; to: ReplyAddress; card: ApprovalCard }): Promise<string>;
  enqueue(item: { kind: "card-edit"; to: ReplyAddress; messageId: string; card: ApprovalCard }): Promise<void>;
}

export class Tooling {
  /** Built at start(), and only with servers configured: the MCP SDK is loaded only then. */
  mcp: McpHub | undefined;
  readonly approvals: ApprovalService;
  readonly #builtinRules: McpConfig["builtinTools"];
  readonly #config: McpConfig | undefined;

  constructor(readonly opts: ToolingOptions) {
    // Read (and a bad file refused) at once, so a broken MCP_CONFIG stops the start before anything listens.
    const config = opts.mcpConfig ?? (opts.mcpConfigPath ? loadMcpConfig(opts.mcpConfigPath) : undefined);
    this.#config = config;
    this.#builtinRules = config?.builtinTools ?? {};
    this.approvals = new ApprovalService({
      store: opts.store,
      kv: opts.kv,
      owner: opts.owner,
      timeoutMs: opts.approvalTimeoutMs,
      approvers: opts.approvers,
      mayApprove: opts.mayApprove,
      log: opts.log,
      ...(opts.shared && { pollMs: 1_000 }),
      ...(opts.onDecision && { onDecision: opts.onDecision }),
      transport: { show: (to, card) => this.#show(to, card), update: (to, id, card) => this.#update(to, id, card) },
    });
  }

  /** Starts the MCP servers, waiting for them at most `waitMs` (MCP_START_TIMEOUT); a slower one comes up in the background. */
  async start(opts: { waitMs?: number } = {}): Promise<void> {
    if (!this.#config?.servers.length || this.mcp) return;
    const { McpHub } = await import("../agent/mcp/hub.js");
    // Each attempt may take at least as long as the start waits: a server that needs 15 s is slow, not broken.
    const startTimeoutMs = Math.max(20_000, opts.waitMs ?? 0);
    this.mcp = new McpHub(this.#config, { log: this.opts.log.child({ component: "mcp" }), callTimeoutMs: this.opts.toolTimeoutMs, startTimeoutMs });
    await this.mcp.start(opts);
  }

  /** After the adapters started (cards can be edited): approvals a previous run left are expired, unless processes share the database. */
  async afterAdaptersStarted(): Promise<void> {
    if (!this.opts.shared) await this.approvals.expireOrphans();
  }

  async stop(): Promise<void> {
    await this.mcp?.stop();
  }

  status(): ServerStatus[] {
    return this.mcp?.status() ?? [];
  }

  /** The tools of one turn: built-ins (given, scoped to the session) and every MCP server's. */
  registry(builtins: readonly Tool[]): ToolRegistry {
    return toolRegistry([...builtins, ...(this.mcp?.tools() ?? [])]);
  }

  /** A tool's policy in a chat: an MCP tool's from its server's config; a built-in's from `builtinTools`, else its own default. */
  policyOf(tool: Tool | undefined, name: string, chat: PolicyChat): ToolPolicy {
    const mcp = this.mcp?.policyOf(name, chat);
    if (mcp) return mcp;
    const rule = this.#builtinRules[name];
    return resolvePolicy({ ...(rule && { tool: rule }), ...(tool?.policy && { declared: tool.policy }) }, chat);
  }

  /** The approval handler for one turn; without the turn's event (reflection, tests) nothing is asked and `ask` means deny. */
  handler(ctx: AgentContext, tools: ToolRegistry): ApprovalHandler {
    const ev = ctx.event;
    if (!ev)
      return async (call) => ({ decision: this.policyOf(tools.get(call.name), call.name, { platform: "", chatId: "" }) === "auto" ? "approve" : "deny" });
    const chat = { platform: ev.replyTo.platform, chatId: ev.replyTo.chatId };
    return this.approvals.handler({ sessionId: ctx.session.id, event: ev, ...(ctx.holdTimeout && { holdTimeout: ctx.holdTimeout }) }, (name) =>
      this.policyOf(tools.get(name), name, chat),
    );
  }

  /**
   * Ahead of the commands: `/approve <id>` and `/deny <id>` for an approval
   * (the text fallback of the buttons; a pairing code goes on to /approve),
   * and /stop, /new and /reset cancel what the session waits on.
   */
  interceptor(): Interceptor {
    return async (event, ctx) => {
      if (event.type !== "message") return event;
      const cmd = parseCommand(event.text);
      if (!cmd) return event;
      if (cmd.name === "stop" || cmd.name === "new" || cmd.name === "reset") {
        await this.approvals.cancelSession(ctx.session.id, `/${cmd.name}`);
        return event;
      }
      if ((cmd.name === "approve" || cmd.name === "deny") && APPROVAL_ID.test(cmd.args.toLowerCase())) {
        const r = await this.approvals.click({
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
        if (!r.ok && cmd.name === "approve" && event.isAdmin && /^There is no approval/.test(r.text)) return event;
        ctx.notify(r.ok ? "success" : "error", r.text);
        return null;
      }
      return event;
    };
  }

  /**
   * `/tools`: the tools a turn in this session is offered (`offered`, the
   * same registry the turn's agent gets, so the list cannot drift from what
   * the model sees), each with its policy here; every MCP server's state,
   * with the tools of one not ready marked unavailable. `/deny <id>`.
   */
  commands(offered: (session: Info) => ToolRegistry): CommandSpec[] {
    return [
      {
        name: "tools",
        summary: "list the agent's tools, their status and policy here",
        run: (ctx) => {
          const chat = { platform: ctx.event.replyTo.platform, chatId: ctx.event.replyTo.chatId };
          const tools = offered(ctx.session.info).list();
          const names = new Set(tools.map((t) => t.name));
          const lines: string[] = [];
          for (const t of tools) if (!t.server) lines.push(`${t.name} (built-in): ${this.policyOf(t, t.name, chat)}`);
          for (const s of this.status()) {
            const state = s.state === "ready" ? "ready" : `${s.state}${s.error ? `: ${s.error}` : ""}`;
            lines.push(`server ${s.name} (${s.transport}): ${state}${s.restarts ? `, ${s.restarts} restart(s)` : ""}`);
            for (const tool of s.tools) {
              const name = `${s.name}__${tool}`;
              lines.push(`  ${name}: ${this.policyOf(undefined, name, chat)}${s.state === "ready" && names.has(name) ? "" : " (unavailable)"}`);
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

  /**
   * Out of the outbound door, like any reply: paced, 429s waited out,
   * retried, in the chat's order. A card that cannot be shown at all rejects
   * (the door tells the chat, where it still can): the service then denies
   * the call, telling the model the card could not be shown.
   */
  #show(to: ReplyAddress, card: ApprovalCard): Promise<string> {
    return this.opts.outbound().enqueue({ kind: "card", to, card });
  }

  #update(to: ReplyAddress, messageId: string, card: ApprovalCard): Promise<void> {
    return this.opts.outbound().enqueue({ kind: "card-edit", to, messageId, card });
  }
}
