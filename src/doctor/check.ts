import { redactSecrets } from "../log.js";

/** One line of doctor's checklist. A failure always says how to fix it. */
export interface CheckResult {
  /** Stable id for scripts, e.g. `telegram.token`. */
  id: string;
  title: string;
  status: "pass" | "warn" | "fail" | "skip";
  detail: string;
  fix?: string;
}

export const pass = (id: string, title: string, detail: string): CheckResult => ({ id, title, status: "pass", detail });
export const skip = (id: string, title: string, detail: string): CheckResult => ({ id, title, status: "skip", detail });
export const warn = (id: string, title: string, detail: string, fix: string): CheckResult => ({ id, title, status: "warn", detail, fix });
export const fail = (id: string, title: string, detail: string, fix: string): CheckResult => ({ id, title, status: "fail", detail, fix });

export interface HttpAnswer {
  status: number;
  headers: Headers;
  body: unknown;
  ms: number;
}

/** Why a call got no HTTP answer at all, in words (never the URL's token). */
export class Unreachable extends Error {}

/**
 * One HTTP call with a deadline. Resolves with any HTTP answer (the caller
 * judges the status); rejects with Unreachable when there is none.
 */
export async function call(url: string, init: RequestInit & { timeoutMs: number }): Promise<HttpAnswer> {
  const started = performance.now();
  const { timeoutMs, ...rest } = init;
  let res: Response;
  try {
    res = await fetch(url, { ...rest, signal: AbortSignal.timeout(timeoutMs) });
  } catch (e) {
    const err = e as Error & { cause?: { code?: string; message?: string } };
    if (err.name === "TimeoutError" || err.name === "AbortError") throw new Unreachable(`no answer within ${Math.round(timeoutMs / 1000)} s`);
    throw new Unreachable(err.cause?.code ?? err.cause?.message ?? err.message);
  }
  let text: string;
  try {
    text = await res.text();
  } catch (e) {
    const err = e as Error;
    if (err.name === "TimeoutError" || err.name === "AbortError") throw new Unreachable(`the answer did not finish within ${Math.round(timeoutMs / 1000)} s`);
    throw new Unreachable(err.message);
  }
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON: kept as text.
  }
  return { status: res.status, headers: res.headers, body, ms: Math.round(performance.now() - started) };
}

/** The host a URL points at, for messages (never its path: a Telegram URL holds the token). */
export function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return "(invalid URL)";
  }
}

/** Text from a remote error body, short and with every known secret masked. */
export function remoteMessage(body: unknown): string {
  const b = body as { description?: unknown; message?: unknown; error?: unknown } | undefined;
  const raw =
    typeof b === "string"
      ? b
      : typeof b?.description === "string"
        ? b.description
        : typeof (b?.error as { message?: unknown })?.message === "string"
          ? String((b!.error as { message: string }).message)
          : typeof b?.error === "string"
            ? b.error
            : typeof b?.message === "string"
              ? b.message
              : JSON.stringify(b ?? "");
  const s = redactSecrets(raw).replace(/\s+/g, " ").trim();
  return s.length > 200 ? `${s.slice(0, 200)}…` : s;
}
