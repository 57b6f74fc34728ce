import type { Config } from "../config.js";
import { DEFAULT_AGENT, defaultAgentSettingsOf, loadAgentsConfig, type AgentSpec } from "../config/agents.js";
import { registerSecret } from "../log.js";
import { call, fail, hostOf, pass, remoteMessage, skip, Unreachable, warn, type CheckResult } from "./check.js";

/** Where one agent's model server is and how to ask it, and how the results name it. */
interface ModelServer {
  base: string;
  model: string | undefined;
  headers: Record<string, string>;
  /** The server's host, as the results name it. */
  where: string;
  timeoutMs: number;
  /** `model` for the agent `default` (the ids doctor always had), `agent.<name>` for the others. */
  id: string;
  /** " (agent support)" after each title, nothing for `default`. */
  of: string;
  /** What to check when the server refuses the key, is unreachable, or lacks the model: the variable or the file's field. */
  fix: { key: string; url: string; model: string };
}

/**
 * The model servers: for each agent with an endpoint (OPENAI_* for
 * `default`, AGENTS_CONFIG for the others), the model list (GET /models) and
 * a one-token completion, the same endpoint every turn uses. An agent
 * without one (the echo agent) is skipped. An invalid AGENTS_CONFIG is one
 * failed check with the line the gateway would stop with. Keys are never
 * shown: each is registered with the redactor before anything is asked.
 */
export async function checkModel(config: Config, timeoutMs: number, env: NodeJS.ProcessEnv = {}): Promise<CheckResult[]> {
  let agents: AgentSpec[];
  try {
    agents = [...loadAgentsConfig(config.AGENTS_CONFIG, env, defaultAgentSettingsOf(config)).agents.values()];
  } catch (e) {
    return [fail("agents", "Agents", (e as Error).message, "Fix AGENTS_CONFIG's file as the message says; `switchboard serve` refuses to start with it.")];
  }
  for (const a of agents) registerSecret(a.resolvedApiKey);
  const results = await Promise.all(agents.map((a) => checkAgent(a, timeoutMs)));
  return results.flat();
}

async function checkAgent(agent: AgentSpec, timeoutMs: number): Promise<CheckResult[]> {
  const isDefault = agent.name === DEFAULT_AGENT;
  const id = isDefault ? "model" : `agent.${agent.name}`;
  const of = isDefault ? "" : ` (agent ${agent.name})`;
  // What the operator fixes: the OPENAI_* variable for `default` made from them, else the agent's field in the file.
  const field = (variable: string, name: string) => (agent.fromEnvironment ? variable : `agent ${agent.name}'s ${name} in AGENTS_CONFIG`);
  if (!agent.baseUrl && !agent.resolvedApiKey)
    return [
      skip(
        id,
        `Model${of}`,
        agent.fromEnvironment
          ? "no OPENAI_BASE_URL or OPENAI_API_KEY: the echo agent answers (echo: <text>)."
          : `agent ${agent.name} names no baseUrl or key: the echo agent answers for it.`,
      ),
    ];
  const key = agent.apiKeyEnv ? `the variable ${agent.apiKeyEnv} (agent ${agent.name}'s apiKeyEnv)` : field("OPENAI_API_KEY", "apiKey");
  const base = (agent.baseUrl ?? "https://api.openai.com/v1").replace(/\/+$/, "");
  const server: ModelServer = {
    base,
    model: agent.model,
    headers: {
      "content-type": "application/json",
      ...(agent.resolvedApiKey ? { authorization: `Bearer ${agent.resolvedApiKey}` } : {}),
    },
    where: hostOf(base),
    timeoutMs,
    id,
    of,
    fix: { key: `Check ${key}: the server refused it.`, url: field("OPENAI_BASE_URL", "baseUrl"), model: field("OPENAI_MODEL", "model") },
  };
  const list = await listCheck(server);
  if (list.final) return [list.result];
  return [list.result, await answerCheck(server)];
}

/** GET /models: the key is taken and the model is listed. `final` when nothing more is worth asking. */
async function listCheck({ base, model, headers, where, timeoutMs, id, of, fix }: ModelServer): Promise<{ result: CheckResult; final?: true }> {
  try {
    const r = await call(`${base}/models`, { headers, timeoutMs });
    if (r.status === 401 || r.status === 403)
      return { result: fail(`${id}.list`, `Model server${of}`, `${where} refused the key (${r.status}: ${remoteMessage(r.body)}).`, fix.key), final: true };
    const ids = ((r.body as { data?: Array<{ id?: unknown }> }).data ?? []).map((m) => String(m.id));
    if (r.status !== 200)
      return {
        result: warn(
          `${id}.list`,
          `Model server${of}`,
          `GET /models answered ${r.status} (${remoteMessage(r.body)}); some servers do not list models.`,
          "Nothing to do if the completion below passes.",
        ),
      };
    if (model && !ids.includes(model))
      return {
        result: warn(
          `${id}.list`,
          `Model server${of}`,
          `${where} lists ${ids.length} models, and ${model} is not among them${ids.length ? ` (e.g. ${ids.slice(0, 3).join(", ")})` : ""}.`,
          `Check ${fix.model}'s spelling, or pull the model first (Ollama: \`ollama pull ${model}\`).`,
        ),
      };
    return { result: pass(`${id}.list`, `Model server${of}`, `${where} answers; ${model} is listed (${r.ms} ms).`) };
  } catch (e) {
    if (!(e instanceof Unreachable)) throw e;
    return {
      result: fail(`${id}.list`, `Model server${of}`, `${where} could not be reached: ${e.message}.`, `Check ${fix.url} and that the model server is running.`),
      final: true,
    };
  }
}

/** A one-token completion: the request every turn makes. */
async function answerCheck({ base, model, headers, where, timeoutMs, id, of, fix }: ModelServer): Promise<CheckResult> {
  try {
    const complete = (limit: Record<string, number>) =>
      call(`${base}/chat/completions`, {
        method: "POST",
        headers,
        body: JSON.stringify({ model, messages: [{ role: "user", content: "Reply with the word OK." }], ...limit, stream: false }),
        timeoutMs,
      });
    let r = await complete({ max_tokens: 1 });
    // OpenAI's reasoning models refuse max_tokens and want max_completion_tokens.
    if (r.status === 400 && /max_tokens/.test(remoteMessage(r.body))) r = await complete({ max_completion_tokens: 1 });
    const choices = (r.body as { choices?: unknown[] }).choices;
    if (r.status === 200 && Array.isArray(choices) && choices.length > 0)
      return pass(`${id}.answer`, `Model answers${of}`, `${model} answered a one-token completion in ${r.ms} ms.`);
    if (r.status === 401 || r.status === 403)
      return fail(`${id}.answer`, `Model answers${of}`, `${where} refused the key (${r.status}: ${remoteMessage(r.body)}).`, fix.key);
    if (r.status === 404)
      return fail(
        `${id}.answer`,
        `Model answers${of}`,
        `${where} does not know the model ${model} (404: ${remoteMessage(r.body)}).`,
        `Set ${fix.model} to a model the server has (GET ${base}/models lists them), or pull it first (Ollama: \`ollama pull ${model}\`).`,
      );
    return fail(
      `${id}.answer`,
      `Model answers${of}`,
      `the completion failed (${r.status}: ${remoteMessage(r.body)}).`,
      "Check the model server's log; the gateway sends the same request shape for every turn.",
    );
  } catch (e) {
    if (!(e instanceof Unreachable)) throw e;
    return fail(
      `${id}.answer`,
      `Model answers${of}`,
      `${model} did not answer a one-token completion: ${e.message}.`,
      `Check that the model server is up and the model is loaded (a first request may load it: try again), and that AGENT_TIMEOUT allows for it. doctor --timeout 60s waits longer.`,
    );
  }
}
