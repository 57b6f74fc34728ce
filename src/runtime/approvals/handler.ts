import type { ToolPolicy } from "../../agent/tool-policy.js";
import type { ApprovalHandler } from "../../agent/tools.js";
import type { MessageEvent } from "../events.js";
import type { ApprovalService } from "./service.js";

/**
 * A turn's approval handler: `policyOf` gives each tool's policy in this chat; under `ask` the service
 * waits for a person, the turn's clock held meanwhile (`holdTimeout`).
 */
export function approvalHandler(
  approvals: Pick<ApprovalService, "ask">,
  ctx: { sessionId: string; event: MessageEvent; holdTimeout?: () => () => void },
  policyOf: (tool: string) => ToolPolicy,
): ApprovalHandler {
  return async (call, { signal, tool }) => {
    const policy = policyOf(call.name);
    if (policy === "deny") return { decision: "deny" };
    if (policy === "auto") return { decision: "approve", note: "auto by policy" };
    const release = ctx.holdTimeout?.();
    try {
      return await approvals.ask(call, tool?.server, ctx, signal);
    } finally {
      release?.();
    }
  };
}
