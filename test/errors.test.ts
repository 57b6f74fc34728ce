import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { AgentError } from "../src/agent/types.js";
import { CliError } from "../src/cli/output.js";
import { ConfigError, loadConfig } from "../src/config.js";
import { SwitchboardError, isSwitchboardError } from "../src/errors.js";
import { AdapterError, AdapterSetupError } from "../src/gateway/contract.js";
import { SchedulerClosedError } from "../src/gateway/outbound/scheduler.js";
import { Unanswered } from "../src/runtime/durable-commit.js";
import { TurnAbandoned } from "../src/runtime/turn.js";
import { SessionError, errors } from "../src/session/errors.js";
import { StoreError } from "../src/store/errors.js";
import { migrate } from "../src/store/migrate.js";
import { TelegramAdapter } from "../adapters/telegram/adapter.js";

describe("one error base with a stable code", () => {
  it("every family extends SwitchboardError and keeps its name and code", () => {
    const cases: Array<[SwitchboardError, string, string]> = [
      [errors.notFound("Session x"), "SessionError", "NotFound"],
      [new StoreError("Busy", "locked"), "StoreError", "Busy"],
      [new AgentError("Timeout", "slow"), "AgentError", "Timeout"],
      [new AdapterError("telegram", "RateLimited", "429", 1000), "AdapterError", "RateLimited"],
      [new AdapterSetupError("Config", "set X"), "AdapterSetupError", "Config"],
      [new ConfigError("PORT", "PORT: use a number"), "ConfigError", "Invalid"],
      [new CliError("Usage", "bad"), "CliError", "Usage"],
      [new SchedulerClosedError("closed"), "SchedulerClosedError", "Closed"],
      [new Unanswered("late"), "Unanswered", "Unanswered"],
      [new TurnAbandoned(), "TurnAbandoned", "Abandoned"],
    ];
    for (const [err, name, code] of cases) {
      expect(err).toBeInstanceOf(SwitchboardError);
      expect(err).toBeInstanceOf(Error);
      expect([err.name, err.code]).toEqual([name, code]);
      expect(isSwitchboardError(err, code)).toBe(true);
    }
    expect(errors.notFound("x")).toBeInstanceOf(SessionError);
    expect(isSwitchboardError(new Error("plain"))).toBe(false);
  });

  it("a bad setting stops the start with a ConfigError naming the variable", () => {
    let caught: unknown;
    try {
      loadConfig({ HTTP_PORT: "not-a-port" });
    } catch (e) {
      caught = e;
    }
    expect(isSwitchboardError(caught, "Invalid")).toBe(true);
    expect((caught as ConfigError).variable).toBe("HTTP_PORT");
  });

  it("an adapter built without its token throws AdapterSetupError 'Config', not a plain Error", () => {
    let caught: unknown;
    try {
      new TelegramAdapter({ token: "" } as ConstructorParameters<typeof TelegramAdapter>[0]);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(AdapterSetupError);
    expect((caught as AdapterSetupError).code).toBe("Config");
    expect((caught as Error).message).toContain("TELEGRAM_BOT_TOKEN");
  });

  it("a migration that fails is StoreError 'MigrationFailed' (not 'Unavailable'), and nothing of it is applied", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sb-migrate-"));
    try {
      const good = path.join(dir, "sqlite", "migrations", "20990101000000_good");
      const bad = path.join(dir, "sqlite", "migrations", "20990101000001_broken");
      fs.mkdirSync(good, { recursive: true });
      fs.mkdirSync(bad, { recursive: true });
      fs.writeFileSync(path.join(good, "migration.sql"), "CREATE TABLE t (id INTEGER PRIMARY KEY);");
      fs.writeFileSync(path.join(bad, "migration.sql"), "CREATE TABLE t (id INTEGER PRIMARY KEY);"); // t exists: fails
      const url = `file:${path.join(dir, "x.db")}`;
      const failed = await migrate(url, { root: dir }).catch((e: unknown) => e);
      expect(failed).toBeInstanceOf(StoreError);
      expect((failed as StoreError).code).toBe("MigrationFailed");
      expect((failed as Error).message).toContain("20990101000001_broken");
      // One transaction: the good one was rolled back with it, so both are still pending.
      expect((await migrate(url, { root: dir, dryRun: true })).pending).toEqual(["20990101000000_good", "20990101000001_broken"]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
