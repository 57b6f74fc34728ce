/**
 * Telemetry off loads nothing of the OpenTelemetry SDK: a fresh process
 * (this one's module graph is shared with other files) starts and stops the
 * whole app without an OTLP endpoint, and with OTEL_SDK_DISABLED=true beside
 * one, and only @opentelemetry/api (the no-op API the logger reads) is
 * loaded; with an endpoint the SDK is, so the check can fail.
 */
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sb-otel-off-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

async function loaded(env: Record<string, string>): Promise<string[]> {
  const db = path.join(dir, `${Object.keys(env).length}-${Math.random().toString(36).slice(2)}.db`);
  const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", "test/telemetry/loaded-modules.fixture.ts", db, JSON.stringify(env)], {
    timeout: 60_000,
  });
  return JSON.parse(stdout.trim().split("\n").at(-1)!) as string[];
}

describe("telemetry off loads no SDK module", () => {
  it("no endpoint: only the API", async () => {
    expect(await loaded({})).toEqual(["@opentelemetry/api"]);
  }, 60_000);

  it("an endpoint with OTEL_SDK_DISABLED=true: only the API", async () => {
    expect(await loaded({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:1", OTEL_SDK_DISABLED: "true" })).toEqual(["@opentelemetry/api"]);
  }, 60_000);

  it("an endpoint: the SDK and the exporters are loaded (the check sees them)", async () => {
    const on = await loaded({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://127.0.0.1:1/v1/traces" });
    expect(on).toEqual(
      expect.arrayContaining([
        "@opentelemetry/sdk-trace-node",
        "@opentelemetry/exporter-trace-otlp-proto",
        "@opentelemetry/exporter-trace-otlp-http",
        "@opentelemetry/sdk-metrics",
        "@opentelemetry/exporter-metrics-otlp-proto",
      ]),
    );
  }, 60_000);
});
