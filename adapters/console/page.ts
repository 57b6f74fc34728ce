/**
 * The console page: plain HTML, CSS and vanilla JS in ./static, served as
 * they are (no build step, no framework). The script and stylesheet are
 * separate files rather than inline so the page can run under a CSP that
 * forbids inline script: whatever text a chat carries, it cannot execute.
 */
import { readFileSync } from "node:fs";

export interface Asset {
  path: string;
  file: string;
  contentType: string;
}

export const ASSETS: readonly Asset[] = [
  { path: "/", file: "index.html", contentType: "text/html; charset=utf-8" },
  { path: "/console/console.js", file: "console.js", contentType: "text/javascript; charset=utf-8" },
  { path: "/console/console.css", file: "console.css", contentType: "text/css; charset=utf-8" },
];

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
};

const cache = new Map<string, string>();

/** The asset's text, read once: the files ship next to this module (tsx runs the sources in place). */
export function assetBody(a: Asset): string {
  let body = cache.get(a.file);
  if (body === undefined) {
    body = readFileSync(new URL(`./static/${a.file}`, import.meta.url), "utf8");
    cache.set(a.file, body);
  }
  return body;
}
