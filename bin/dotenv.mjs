// `.env` in the working directory, as `.env.example` describes, for bin/switchboard.mjs and
// bin/healthcheck.mjs alike. Variables already in the environment win: Node's loader never
// overwrites one that is set.
import fs from "node:fs";

export function loadDotEnv(who) {
  if (!fs.existsSync(".env")) return;
  try {
    process.loadEnvFile(".env");
  } catch (e) {
    console.error(`${who}: cannot read .env in ${process.cwd()}: ${e.message}`);
    process.exit(1);
  }
}
