/**
 * Every answer an API test gets, checked against the OpenAPI document the
 * gateway serves: the status is listed for that route and method, and the
 * body matches the schema listed for that status (ajv, JSON Schema 2020-12,
 * the dialect of OpenAPI 3.1). A test file wraps its requests with
 * `checkedApi()`; its afterAll fails on any answer the document does not
 * describe.
 */
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import { afterAll, expect } from "vitest";

export interface Exchange {
  method: string;
  /** The request target as sent (path and query). */
  target: string;
  status: number;
  contentType: string | null;
  body: string;
  /** Only the status line and headers were read (a raw socket closed early): the body is not checked. */
  bodyUnread?: boolean;
}

type Responses = Record<string, { content?: Record<string, { schema?: unknown }> }>;
export type OpenApiDoc = { paths: Record<string, Record<string, { responses?: Responses }>> } & Record<string, unknown>;

const API = "/api/v1/";

/** The document's template for a path ("/api/v1/schedules/{id}"), preferring literal segments; undefined outside the document. */
export function templateOf(doc: OpenApiDoc, pathname: string): string | undefined {
  const seg = pathname.split("/");
  let best: { t: string; params: number } | undefined;
  for (const t of Object.keys(doc.paths)) {
    const ts = t.split("/");
    if (ts.length !== seg.length) continue;
    let params = 0;
    const ok = ts.every((s, i) => {
      if (/^\{[^}]+\}$/.test(s)) return ++params > 0 && seg[i] !== "";
      return s === seg[i];
    });
    if (ok && (!best || params < best.params)) best = { t, params };
  }
  return best?.t;
}

/** Checks answers against one served document. */
export class OpenApiChecker {
  readonly #ajv: Ajv2020;
  readonly #compiled = new Map<string, ValidateFunction>();

  constructor(readonly doc: OpenApiDoc) {
    // The document is not itself a schema: added whole, so a response schema's "#/components/..." refs resolve in it.
    this.#ajv = new Ajv2020({ strict: false, validateSchema: false, validateFormats: false, allErrors: true });
    this.#ajv.addSchema(doc as object, "openapi");
  }

  /** What is wrong with one answer, or undefined when the document describes it. */
  problem(x: Exchange): string | undefined {
    const url = new URL(x.target, "http://api.invalid");
    const where = `${x.method} ${url.pathname} -> ${x.status}`;
    if (!url.pathname.startsWith(API) && url.pathname !== API.slice(0, -1)) return undefined;
    const template = templateOf(this.doc, url.pathname);
    const op = template ? this.doc.paths[template]?.[x.method.toLowerCase()] : undefined;
    // A request for no documented operation must be refused (and is not the document's to describe).
    if (!op) return x.status >= 400 && x.status < 500 ? undefined : `${where}: no documented operation, and not refused with a 4xx`;
    const listed = op.responses?.[String(x.status)] ?? op.responses?.default;
    if (!listed) return `${where}: status not listed for ${x.method} ${template} (listed: ${Object.keys(op.responses ?? {}).join(", ")})`;
    const json = listed.content?.["application/json"];
    if (x.bodyUnread) return undefined;
    if (!json) return x.body.length === 0 ? undefined : `${where}: the document lists no body, the answer has ${x.body.length} bytes`;
    if (!/^application\/json\s*(;|$)/i.test(x.contentType ?? "")) return `${where}: content-type ${x.contentType}, the document says application/json`;
    let body: unknown;
    try {
      body = JSON.parse(x.body);
    } catch {
      return `${where}: the body is not JSON: ${x.body.slice(0, 100)}`;
    }
    const pointer = ["paths", template!, x.method.toLowerCase(), "responses", x.status in (op.responses ?? {}) ? String(x.status) : "default"]
      .map((s) => encodeURIComponent(s.replace(/~/g, "~0").replace(/\//g, "~1")))
      .join("/");
    const ref = `openapi#/${pointer}/content/application~1json/schema`;
    const validate = this.#compiled.get(ref) ?? this.#ajv.compile({ $ref: ref });
    this.#compiled.set(ref, validate);
    if (validate(body)) return undefined;
    const errs = (validate.errors ?? []).slice(0, 3).map((e) => `${e.instancePath || "/"} ${e.message}`);
    return `${where}: the body does not match the schema for ${x.status}: ${errs.join("; ")}; body ${x.body.slice(0, 200)}`;
  }
}

/**
 * Records a test file's API answers, with each gateway's served document
 * (fetched with `token` on the first answer from that gateway, while it runs),
 * and checks them all after the file: `fetch` wraps the global one.
 */
export class ApiRecorder {
  readonly exchanges: Array<Exchange & { base: string }> = [];
  readonly #docs = new Map<string, Promise<OpenApiDoc>>();

  constructor(readonly token: string) {}

  async fetch(url: string, init?: RequestInit): Promise<Response> {
    const res = await fetch(url, init);
    const body = await res.clone().text();
    const u = new URL(url);
    await this.record(u.origin, {
      method: init?.method ?? "GET",
      target: `${u.pathname}${u.search}`,
      status: res.status,
      contentType: res.headers.get("content-type"),
      body,
    });
    return res;
  }

  /**
   * Records an answer read off a raw socket (status line, headers, body as
   * latin1 text). One whose body was not read whole is checked on its status only.
   */
  async recordRaw(base: string, method: string, target: string, raw: string): Promise<void> {
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(raw);
    const split = raw.indexOf("\r\n\r\n");
    if (!m || split < 0) return;
    const head = raw.slice(0, split);
    const header = (name: string) => new RegExp(`^${name}:\\s*(.*)$`, "im").exec(head)?.[1]?.trim() ?? null;
    const rest = Buffer.from(raw.slice(split + 4), "latin1");
    const length = Number(header("content-length") ?? Number.NaN);
    const whole = Number.isFinite(length) && rest.length >= length;
    await this.record(base, {
      method,
      target,
      status: Number(m[1]),
      contentType: header("content-type"),
      body: whole ? rest.subarray(0, length).toString("utf8") : "",
      ...(!whole && { bodyUnread: true }),
    });
  }

  /** Records an answer got some other way. */
  async record(base: string, x: Exchange): Promise<void> {
    this.exchanges.push({ ...x, base });
    if (!this.#docs.has(base)) {
      const doc = fetch(`${base}${API}openapi.json`, { headers: { authorization: `Bearer ${this.token}` } }).then(async (r) => {
        if (r.status !== 200) throw new Error(`GET ${base}${API}openapi.json answered ${r.status}`);
        return (await r.json()) as OpenApiDoc;
      });
      this.#docs.set(base, doc);
      await doc;
    }
  }

  async problems(): Promise<string[]> {
    const checkers = new Map<string, OpenApiChecker>();
    const out = new Set<string>();
    for (const x of this.exchanges) {
      const c = checkers.get(x.base) ?? new OpenApiChecker(await this.#docs.get(x.base)!);
      checkers.set(x.base, c);
      const p = c.problem(x);
      if (p) out.add(p);
    }
    return [...out];
  }

  /** The distinct (method, route, status) seen, for a report line. */
  async seen(): Promise<string[]> {
    const out = new Set<string>();
    for (const x of this.exchanges) {
      const doc = await this.#docs.get(x.base)!;
      const path = new URL(x.target, "http://api.invalid").pathname;
      out.add(`${x.method} ${templateOf(doc, path) ?? path} ${x.status}`);
    }
    return [...out].sort();
  }
}

/** A recorder whose answers this test file's afterAll checks against the served document. */
export function checkedApi(token: string, name: string): ApiRecorder {
  const rec = new ApiRecorder(token);
  afterAll(async () => {
    const problems = await rec.problems();
    console.log(`openapi (${name}): ${rec.exchanges.length} answers, ${(await rec.seen()).length} distinct route+status, ${problems.length} not as documented`);
    expect(rec.exchanges.length).toBeGreaterThan(0);
    expect(problems).toEqual([]);
  });
  return rec;
}
