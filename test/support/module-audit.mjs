// `node --import ./test/support/module-audit.mjs ...`: appends the URL of every module the
// process loads (ES modules through a resolve hook, CommonJS through Module._load) to the
// file named by MODULE_AUDIT_FILE, one a line. test/build.slow.test.ts uses it to show the
// compiled gateway loads no TypeScript compiler and no .ts file.
import fs from "node:fs";
import Module, { register } from "node:module";
import { pathToFileURL } from "node:url";

const file = process.env.MODULE_AUDIT_FILE;
if (file) {
  register("./module-audit-hooks.mjs", import.meta.url, { data: { file } });
  const load = Module._load;
  Module._load = function (request, parent, isMain) {
    let resolved = request;
    try {
      resolved = Module._resolveFilename(request, parent, isMain);
    } catch {
      /* left to the real loader to report */
    }
    fs.appendFileSync(file, `cjs ${resolved.startsWith("/") ? pathToFileURL(resolved).href : resolved}\n`);
    return load.apply(this, arguments);
  };
}
