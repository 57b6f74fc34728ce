// Generates the Prisma clients for both providers, offline.
// PRISMA_SCHEMA_ENGINE_BINARY points at a placeholder so the CLI never tries to
// download the Rust engine: generation does not need it.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const cli = path.join(root, "node_modules", "prisma", "build", "index.js");
if (!fs.existsSync(cli)) {
  // `npm ci --omit=dev` (a production install) runs this too: the Prisma CLI is a dev
  // dependency there, and the clients come compiled inside the build (dist/).
  console.log("Prisma CLI not installed (production install): the Prisma clients come compiled in dist/.");
  process.exit(0);
}
for (const provider of ["sqlite", "postgresql"]) {
  const r = spawnSync(process.execPath, [cli, "generate", "--no-hints"], {
    cwd: root,
    stdio: ["ignore", "ignore", "inherit"],
    env: {
      ...process.env,
      DB_PROVIDER: provider,
      PRISMA_SCHEMA_ENGINE_BINARY: path.join(root, "scripts", "no-schema-engine.sh"),
      PRISMA_HIDE_UPDATE_MESSAGE: "1",
      CHECKPOINT_DISABLE: "1",
    },
  });
  if (r.status !== 0) {
    console.error(`prisma generate failed for ${provider} (exit ${r.status}).`);
    process.exit(r.status ?? 1);
  }
}
console.log("Prisma clients generated for sqlite and postgresql.");
