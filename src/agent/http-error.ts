import type { HttpOptions } from "./http.js";
import { AgentError } from "./types.js";

/** Replaces every occurrence of the secret; upstream error bodies sometimes echo the key back. */
export function redact(text: string, secret: string | undefined): string {
  return secret && secret.length > 0 ? text.split(secret).join("[redacted]") : text;
}

/** The URL without credentials or query, for messages. */
export function safeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return "(invalid URL)";
  }
}

/** The error for a model server's final non-OK answer: what happened, and what to change, for each kind of status. */
export function httpError(status: number, body: string, retryAfterMs: number | undefined, o: HttpOptions, attempts: number, location?: string): AgentError {
  const where = safeUrl(o.url);
  const said = body ? ` The server said: ${body}` : "";
  const opts = { status, retryAfterMs };
  if (status >= 300 && status < 400) {
    // Not followed: a POST redirected is a base URL that moved (http to https, a new path), which the operator should set.
    const to = location ? ` to ${safeUrl(URL.canParse(location, o.url) ? new URL(location, o.url).href : location)}` : "";
    return new AgentError(
      "Config",
      `The model server at ${where} redirected the request${to} (HTTP ${status}). Set OPENAI_BASE_URL to the address it points at.${said}`,
      opts,
    );
  }
  if (status === 429) {
    const wait = retryAfterMs !== undefined ? ` It asked to wait ${Math.ceil(retryAfterMs / 1000)} s.` : "";
    return new AgentError(
      "RateLimited",
      `The model server at ${where} is rate limiting requests (HTTP 429 after ${attempts} attempt(s)).${wait} Try again later, or raise the provider's limits.${said}`,
      opts,
    );
  }
  if (status === 401 || status === 403) {
    return new AgentError("Config", `The model server at ${where} rejected the credentials (HTTP ${status}). Check OPENAI_API_KEY.${said}`, opts);
  }
  if (status === 404) {
    return new AgentError(
      "Config",
      `The model server answered HTTP 404 for ${where}. Check OPENAI_BASE_URL (it usually ends in /v1) and the model name in OPENAI_MODEL or /model (Ollama answers 404 for a model it has not pulled).${said}`,
      opts,
    );
  }
  if (status >= 500) {
    return new AgentError(
      "Upstream",
      `The model server at ${where} failed (HTTP ${status} after ${attempts} attempt(s)). Try again later, or check the server's logs.${said}`,
      opts,
    );
  }
  return new AgentError(
    "Upstream",
    `The model server at ${where} refused the request (HTTP ${status}). Check the model settings (/model, /think, /temperature).${said}`,
    opts,
  );
}
