/**
 * The console page: plain HTML, CSS and vanilla JS (browser ES modules) in
 * ./static, served as they are (no build step, no framework). The scripts and
 * stylesheets are separate files rather than inline so the page can run under
 * a CSP that forbids inline script: whatever text a chat carries, it cannot execute.
 */
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { extname } from "node:path";

export interface Asset {
  path: string;
  /** A file in ./static, or (with `vendor`) a browser build a package ships, resolved from node_modules. */
  file: string;
  contentType: string;
  vendor?: boolean;
}

const require = createRequire(import.meta.url);

/** Content types of the page's own files; a module script is refused by the browser under any other than JavaScript's. */
const TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
};

/** Every file in ./static: index.html at `/`, the others under `/console/` (so a new module or stylesheet is served as it is added). */
function staticAssets(): Asset[] {
  return readdirSync(new URL("./static/", import.meta.url))
    .sort()
    .map((file) => {
      const contentType = TYPES[extname(file)];
      if (!contentType) throw new Error(`adapters/console/static/${file}: the console serves only ${Object.keys(TYPES).join(", ")} files`);
      return { path: file === "index.html" ? "/" : `/console/${file}`, file, contentType };
    });
}

/**
 * Model answers are Markdown: marked renders them in the page, and DOMPurify
 * sanitizes what it produced before it reaches the DOM. Both are served
 * from the packages' own browser builds, pinned in package.json.
 */
export const ASSETS: readonly Asset[] = [
  ...staticAssets(),
  { path: "/console/vendor/marked.js", file: "marked/lib/marked.umd.js", contentType: "text/javascript; charset=utf-8", vendor: true },
  { path: "/console/vendor/purify.js", file: "dompurify/dist/purify.min.js", contentType: "text/javascript; charset=utf-8", vendor: true },
];

/** A vendor file's path: marked's exports map hides lib/, so it is found next to its package.json's folder. */
function vendorPath(file: string): string {
  const [pkg, ...rest] = file.split("/");
  const main = require.resolve(pkg!);
  const root = main.slice(0, main.lastIndexOf(`/node_modules/${pkg}/`) + `/node_modules/${pkg}/`.length);
  return root + rest.join("/");
}

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
    body = a.vendor ? readFileSync(vendorPath(a.file), "utf8") : readFileSync(new URL(`./static/${a.file}`, import.meta.url), "utf8");
    cache.set(a.file, body);
  }
  return body;
}
