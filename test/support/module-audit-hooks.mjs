// Loader hooks for module-audit.mjs (they run on Node's loader thread).
import fs from "node:fs";

let file;
export function initialize(data) {
  file = data.file;
}

export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  fs.appendFileSync(file, `esm ${r.url}\n`);
  return r;
}
