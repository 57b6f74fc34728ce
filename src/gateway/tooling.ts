/**
 * The agent's tools for each turn, and who may let them run: the built-in
 * tools, the MCP servers (MCP_CONFIG), each tool's policy in the asking chat,
 * and approvals on the chat's own buttons (src/runtime/approvals). The app
 * composes it; adapters draw the cards and report the clicks.
 */
import { toolRegistry, type Tool, type ToolRegistry } from "../agent/tools.js";
import type { PolicyChat, ToolPolicy } from "../agent/tool-policy.js";
import { builtinToolSource, type ServerStatus, type ToolSource } from "../agent/tool-source.js";
import { loadMcpConfig, type McpConfig } from "../agent/mcp/config.js";
import { McpToolSource } from "../agent/mcp/source.js";
import type { Logger } from "../log.js";
import type { ApprovalServiceOptions, Approvers } from "../runtime/approvals/options.js";
import { approvalHandler } from "../runtime/approvals/handler.js";
import { ApprovalService } from "../runtime/approvals/service.js";
import type { ApprovalCard } from "../runtime/approvals/card.js";
import type { ReplyAddress } from "../runtime/events.js";
import type { AgentContext } from "../runtime/runner.js";
import type { ApprovalHandler } from "../agent/tools.js";
import type { ApprovalStore } from "../store/approvals.js";
import type { KvStore } from "../store/kv.js";
import type { Info } from "../session/info.js";

export interface ToolingOptions {
  mcpConfigPath?: string;
  /** Instead of a file (tests). */
  mcpConfig?: McpConfig;
  /** The built-in tools of a turn in a session (scoped to it). */
  builtins: (session: Info) => readonly Tool[];
  approvers: Approvers;
  /** THREAD_SESSIONS=parent: threads share their chat's session, and so its "Always" grants. */
  threadsShareChat?: boolean;
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
  readonly approvals: ApprovalService;
  /** The built-in tools, then the MCP servers' (which load the MCP SDK at start, and only when servers are configured). */
  readonly #sources: readonly ToolSource[];

  constructor(readonly opts: ToolingOptions) {
    // Read (and a bad file refused) at once, so a broken MCP_CONFIG stops the start before anything listens.
    const config = opts.mcpConfig ?? (opts.mcpConfigPath ? loadMcpConfig(opts.mcpConfigPath) : undefined);
    this.#sources = [
      builtinToolSource(opts.builtins, config?.builtinTools ?? {}),
      ...(config?.servers.length ? [new McpToolSource(config, { log: opts.log.child({ component: "mcp" }), callTimeoutMs: opts.toolTimeoutMs })] : []),
    ];
    this.approvals = new ApprovalService({
      store: opts.store,
      kv: opts.kv,
      owner: opts.owner,
      timeoutMs: opts.approvalTimeoutMs,
      approvers: opts.approvers,
      ...(opts.threadsShareChat && { threadsShareChat: true }),
      mayApprove: opts.mayApprove,
      log: opts.log,
      ...(opts.shared && { pollMs: 1_000 }),
      ...(opts.onDecision && { onDecision: opts.onDecision }),
      transport: { show: (to, card) => this.#show(to, card), update: (to, id, card) => this.#update(to, id, card) },
    });
  }

  /** Starts the sources' servers, waiting for them at most `waitMs` (MCP_START_TIMEOUT); a slower one comes up in the background. */
  async start(opts: { waitMs?: number } = {}): Promise<void> {
    await Promise.all(this.#sources.map((s) => s.start?.(opts)));
  }

  /** After the adapters started (cards can be edited): approvals a previous run left are expired, unless processes share the database. */
  async afterAdaptersStarted(): Promise<void> {
    if (!this.opts.shared) await this.approvals.expireOrphans();
  }

  async stop(): Promise<void> {
    await Promise.all(this.#sources.map((s) => s.stop?.()));
  }

  status(): ServerStatus[] {
    return this.#sources.flatMap((s) => s.status());
  }

  /** The tools of one turn in `session`: every source's, built-ins first. */
  registry(session: Info): ToolRegistry {
    return toolRegistry(this.#sources.flatMap((s) => s.tools(session)));
  }

  /** A tool's policy in a chat: the first source's that decides it (an MCP server's rules, `builtinTools`), else the tool's own default, else `ask`. */
  policyOf(tool: Tool | undefined, name: string, chat: PolicyChat): ToolPolicy {
    for (const s of this.#sources) {
      const p = s.policyOf(name, chat);
      if (p) return p;
    }
    return tool?.policy ?? "ask";
  }

  /** A tool's policy for an agent in a chat: the agent's pattern decides, except that what the gateway's rules deny stays denied. */
  agentPolicyOf(tool: Tool | undefined, name: string, chat: PolicyChat, agentPolicy?: (name: string) => ToolPolicy | undefined): ToolPolicy {
    const gateway = this.policyOf(tool, name, chat);
    return gateway === "deny" ? "deny" : (agentPolicy?.(name) ?? gateway);
  }

  /**
   * The approval handler for one turn; without the turn's event (reflection, tests) nothing is asked and `ask` means deny.
   * `agentPolicy`: the turn's agent's own patterns (AGENTS_CONFIG `tools`), which decide before the gateway's rules,
   * except that what MCP_CONFIG denies in the chat stays denied: an agent narrows the operator's tool rules, it never opens one.
   */
  handler(ctx: AgentContext, tools: ToolRegistry, agentPolicy?: (name: string) => ToolPolicy | undefined): ApprovalHandler {
    const ev = ctx.event;
    const policy = (name: string, chat: PolicyChat): ToolPolicy => this.agentPolicyOf(tools.get(name), name, chat, agentPolicy);
    if (!ev) return async (call) => ({ decision: policy(call.name, { platform: "", chatId: "" }) === "auto" ? "approve" : "deny" });
    const chat = { platform: ev.replyTo.platform, chatId: ev.replyTo.chatId };
    return approvalHandler(this.approvals, { sessionId: ctx.session.id, event: ev, ...(ctx.holdTimeout && { holdTimeout: ctx.holdTimeout }) }, (name) =>
      policy(name, chat),
    );
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
