import type { Config } from "../config.js";
import { call, fail, hostOf, pass, remoteMessage, skip, Unreachable, warn, type CheckResult } from "./check.js";

/** Where the model server is and how to ask it, from the configuration. */
interface ModelServer {
  base: string;
  model: string | undefined;
  headers: Record<string, string>;
  /** The server's host, as the results name it. */
  where: string;
  timeoutMs: number;
}

const KEY_FIX = "Check OPENAI_API_KEY: the server refused it.";

/**
 * The model server: the model list (GET /models) and a one-token completion,
 * the same endpoint every turn uses. Skipped with the echo agent.
 */
export async function checkModel(config: Config, timeoutMs: number): Promise<CheckResult[]> {
  if (!config.OPENAI_BASE_URL && !config.OPENAI_API_KEY)
    return [skip("model", "Model", "no OPENAI_BASE_URL or OPENAI_API_KEY: the echo agent answers (echo: <text>).")];
  const base = (config.OPENAI_BASE_URL ?? "https://api.openai.com/v1").replace(/\/+$/, "");
  const server: ModelServer = {
    base,
    model: config.OPENAI_MODEL,
    headers: {
      "content-type": "application/json",
      ...(config.OPENAI_API_KEY ? { authorization: `Bearer ${config.OPENAI_API_KEY}` } : {}),
    },
    where: hostOf(base),
    timeoutMs,
  };
  const list = await listCheck(server);
  if (list.final) return [list.result];
  return [list.result, await answerCheck(server)];
}

/** GET /models: the key is taken and the model is listed. `final` when nothing more is worth asking. */
async function listCheck({ base, model, headers, where, timeoutMs }: ModelServer): Promise<{ result: CheckResult; final?: true }> {
  try {
    const r = await call(`${base}/models`, { headers, timeoutMs });
    if (r.status === 401 || r.status === 403)
      return { result: fail("model.list", "Model server", `${where} refused the key (${r.status}: ${remoteMessage(r.body)}).`, KEY_FIX), final: true };
    const ids = ((r.body as { data?: Array<{ id?: unknown }> }).data ?? []).map((m) => String(m.id));
    if (r.status !== 200)
      return {
        result: warn(
          "model.list",
          "Model server",
          `GET /models answered ${r.status} (${remoteMessage(r.body)}); some servers do not list models.`,
          "Nothing to do if the completion below passes.",
        ),
      };
    if (model && !ids.includes(model))
      return {
        result: warn(
          "model.list",
          "Model server",
          `${where} lists ${ids.length} models, and ${model} is not among them${ids.length ? ` (e.g. ${ids.slice(0, 3).join(", ")})` : ""}.`,
          `Check OPENAI_MODEL's spelling, or pull the model first (Ollama: \`ollama pull ${model}\`).`,
        ),
      };
    return { result: pass("model.list", "Model server", `${where} answers; ${model} is listed (${r.ms} ms).`) };
  } catch (e) {
    if (!(e instanceof Unreachable)) throw e;
    return {
      result: fail("model.list", "Model server", `${where} could not be reached: ${e.message}.`, "Check OPENAI_BASE_URL and that the model server is running."),
      final: true,
    };
  }
}

/** A one-token completion: the request every turn makes. */
async function answerCheck({ base, model, headers, where, timeoutMs }: ModelServer): Promise<CheckResult> {
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
      return pass("model.answer", "Model answers", `${model} answered a one-token completion in ${r.ms} ms.`);
    if (r.status === 401 || r.status === 403)
      return fail("model.answer", "Model answers", `${where} refused the key (${r.status}: ${remoteMessage(r.body)}).`, KEY_FIX);
    if (r.status === 404)
      return fail(
        "model.answer",
        "Model answers",
        `${where} does not know the model ${model} (404: ${remoteMessage(r.body)}).`,
        `Set OPENAI_MODEL to a model the server has (GET ${base}/models lists them), or pull it first (Ollama: \`ollama pull ${model}\`).`,
      );
    return fail(
      "model.answer",
      "Model answers",
      `the completion failed (${r.status}: ${remoteMessage(r.body)}).`,
      "Check the model server's log; the gateway sends the same request shape for every turn.",
    );
  } catch (e) {
    if (!(e instanceof Unreachable)) throw e;
    return fail(
      "model.answer",
      "Model answers",
      `${model} did not answer a one-token completion: ${e.message}.`,
      `Check that the model server is up and the model is loaded (a first request may load it: try again), and that AGENT_TIMEOUT allows for it. doctor --timeout 60s waits longer.`,
    );
  }
}
