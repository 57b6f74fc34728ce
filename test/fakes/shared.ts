/**
 * Plumbing shared by the platform fakes: loopback HTTP servers, body parsing,
 * JSON answers, event-driven waiting and one-shot fault plans.
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { WebSocketServer } from "ws";

export const HOST = "127.0.0.1";

export function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

/** A file part of a multipart request. */
export interface UploadedFile {
  field: string;
  name: string;
  type: string;
  size: number;
  data: Buffer;
}

export interface ParsedBody {
  params: Record<string, unknown>;
  files: UploadedFile[];
  /** How the body was encoded: json, form, multipart, none. */
  encoding: "json" | "form" | "multipart" | "none";
}

export class BodyParseError extends Error {}

/**
 * Parses a request body the way the platforms accept it: JSON, URL-encoded
 * form or multipart. Query-string parameters are merged underneath.
 */
export async function parseBody(req: IncomingMessage, raw: Buffer, query?: URLSearchParams): Promise<ParsedBody> {
  const params: Record<string, unknown> = {};
  if (query) for (const [k, v] of query) params[k] = v;
  const ct = (req.headers["content-type"] ?? "").toLowerCase();
  if (raw.length === 0) return { params, files: [], encoding: "none" };
  if (ct.includes("json")) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw.toString("utf8"));
    } catch {
      throw new BodyParseError("body is not valid JSON");
    }
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) Object.assign(params, parsed);
    else params._body = parsed;
    return { params, files: [], encoding: "json" };
  }
  if (ct.includes("multipart/form-data")) {
    const form = await new Response(raw, { headers: { "content-type": req.headers["content-type"] ?? "" } }).formData();
    const files: UploadedFile[] = [];
    for (const [k, v] of form) {
      if (typeof v === "string") params[k] = v;
      else {
        const data = Buffer.from(await v.arrayBuffer());
        files.push({ field: k, name: v.name, type: v.type, size: data.length, data });
      }
    }
    return { params, files, encoding: "multipart" };
  }
  for (const [k, v] of new URLSearchParams(raw.toString("utf8"))) params[k] = v;
  return { params, files: [], encoding: "form" };
}

/** Parses a parameter that may arrive JSON-serialized (form and multipart encodings). */
export function jsonParam<T = unknown>(v: unknown): T | undefined {
  if (v === undefined || v === null || v === "") return undefined;
  if (typeof v === "string") {
    const s = v.trim();
    if (s.startsWith("{") || s.startsWith("[")) {
      try {
        return JSON.parse(s) as T;
      } catch {
        return undefined;
      }
    }
  }
  return v as T;
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.writableEnded) return;
  if (status === 204) {
    res.writeHead(204, headers);
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** Starts listening on 127.0.0.1 on a kernel-chosen port and returns the port. */
export function listen(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, HOST, () => {
      server.off("error", reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** Closes a server, its keep-alive connections and (optionally) its WebSocket clients. */
export async function closeServer(server: Server, wss?: WebSocketServer): Promise<void> {
  if (wss) {
    for (const c of wss.clients) c.terminate();
    await new Promise<void>((r) => wss.close(() => r()));
  }
  if (!server.listening) return;
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref());
}

/**
 * Event-driven waiting. Fakes call `notify()` whenever they record something;
 * `waitFor` re-evaluates its predicate then (and every 25 ms as a fallback), and
 * resolves with the first truthy value.
 */
export class Signal {
  private listeners = new Set<() => void>();

  notify(): void {
    for (const l of [...this.listeners]) l();
  }

  waitFor<T>(predicate: () => T | undefined | null | false, timeoutMs: number, describe: () => string): Promise<T> {
    let first: T | undefined | null | false;
    try {
      first = predicate();
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    if (first) return Promise.resolve(first);
    return new Promise<T>((resolve, reject) => {
      const check = (): void => {
        let v: T | undefined | null | false;
        try {
          v = predicate();
        } catch (err) {
          done();
          reject(err instanceof Error ? err : new Error(String(err)));
          return;
        }
        if (v) {
          done();
          resolve(v);
        }
      };
      const poll = setInterval(check, 25);
      poll.unref();
      const timer = setTimeout(() => {
        done();
        reject(new Error(`waitFor timed out after ${timeoutMs} ms. ${describe()}`));
      }, timeoutMs);
      timer.unref();
      const done = (): void => {
        clearInterval(poll);
        clearTimeout(timer);
        this.listeners.delete(check);
      };
      this.listeners.add(check);
    });
  }
}

/** One planned fault: answer the next `count` matching requests with it. */
export interface PlannedFault<F> {
  match: (key: string) => boolean;
  fault: F;
  remaining: number;
}

/** A queue of one-shot faults keyed by method/route. */
export class FaultPlan<F> {
  private planned: PlannedFault<F>[] = [];

  add(match: string | RegExp | ((key: string) => boolean), fault: F, count = 1): void {
    const fn =
      typeof match === "function" ? match : typeof match === "string" ? (k: string) => k.toLowerCase() === match.toLowerCase() : (k: string) => match.test(k);
    this.planned.push({ match: fn, fault, remaining: count });
  }

  /** Consumes one matching fault, if any (and if `accept` takes it: a fault meant for some calls of a method only). */
  take(key: string, accept?: (fault: F) => boolean): F | undefined {
    const p = this.planned.find((x) => x.remaining > 0 && x.match(key) && (accept?.(x.fault) ?? true));
    if (!p) return undefined;
    p.remaining--;
    this.planned = this.planned.filter((x) => x.remaining > 0);
    return p.fault;
  }

  get pending(): number {
    return this.planned.reduce((n, p) => n + p.remaining, 0);
  }

  clear(): void {
    this.planned = [];
  }
}

export const nowSec = (): number => Math.floor(Date.now() / 1000);
