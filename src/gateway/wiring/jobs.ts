import type { JobRunner } from "../jobs/runner.js";
import type { JobService } from "../jobs/service.js";
import { jobRunner } from "../jobs/wire.js";
import type { AgentPart } from "./agent.js";
import type { GatewayPart } from "./gateway.js";
import type { AppBase, StorePart } from "./parts.js";
import type { RuntimePart } from "./runtime.js";
import type { ToolingPart } from "./tooling.js";

/** The jobs part: the runner that claims due jobs, runs them through the agent and delivers through the outbound ledger. */
export function jobsPart(
  base: AppBase,
  stores: StorePart,
  parts: { agent: AgentPart; tools: ToolingPart; runtime: RuntimePart; gateway: GatewayPart; jobs: JobService },
): JobRunner {
  const { metrics } = base;
  return jobRunner(parts.jobs, {
    config: base.config,
    registry: stores.registry,
    runner: parts.runtime.runner,
    outbound: parts.gateway.outbound,
    deliveries: stores.deliveries,
    ledger: stores.ledger,
    adapters: base.adapters,
    agent: parts.tools.withTools,
    personaOf: parts.agent.agents.personaOf,
    log: base.log,
    metrics: metrics.registry,
    onError: (where) => metrics.internalErrors.inc({ where }),
    owner: base.processId,
    now: base.opts.jobClock,
  });
}
