#!/usr/bin/env node
// The Docker image's HEALTHCHECK (any liveness probe may use it): GET /healthz on the address the
// gateway serves, read as the gateway reads it: HTTP_HOST and HTTP_PORT from the environment, then
// .env in the working directory, then the defaults (127.0.0.1:8787). A wildcard bind (0.0.0.0,
// ::) is probed on loopback, which it includes. Exit 0 when /healthz answers 2xx; 1 otherwise,
// with one line naming the address (what `docker inspect` shows as the probe's output).
// Plain Node and no build: it runs every 30 s and must cost little.
import { loadDotEnv } from "./dotenv.mjs";

loadDotEnv("healthcheck");
const host = (process.env.HTTP_HOST?.trim() || "127.0.0.1").replace(/^\[|\]$/g, "");
const port = process.env.HTTP_PORT?.trim() || "8787";
const probed = host === "0.0.0.0" ? "127.0.0.1" : host === "::" ? "::1" : host;
const url = `http://${probed.includes(":") ? `[${probed}]` : probed}:${port}/healthz`;
try {
  const r = await fetch(url, { signal: AbortSignal.timeout(4000) });
  if (!r.ok) {
    console.error(`healthcheck: ${url} answered ${r.status}: ${(await r.text()).slice(0, 300)}`);
    process.exit(1);
  }
} catch (e) {
  console.error(`healthcheck: ${url} did not answer (HTTP_HOST=${host}, HTTP_PORT=${port}): ${e.cause?.code ?? e.cause?.message ?? e.message}`);
  process.exit(1);
}
