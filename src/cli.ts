import { parseArgs } from "node:util";
import { ConfigError, loadConfig, type Config } from "./config.js";
import { createLogger, registerSecret } from "./log.js";
import { openDatabase, migrate, SessionStore, TranscriptStore, type Database } from "./store/index.js";
import { Registry, SessionError, type Info } from "./session/index.js";

/**
 * `switchboard <command>`: the operator's CLI. Every command accepts --json
 * for scripts; human output is a short table. Exit codes: 0 ok, 1 failure,
 * 2 usage error.
 */
const USAGE = `usage: switchboard <command> [options]

commands:
  serve                          run the gateway (what \`npm start\` does)
  migrate [--dry-run]            apply pending database migrations
  sessions list [--user ID] [--agent ID] [--archived] [--limit N]
  sessions show <id> [--messages N]
  sessions archive <id>
  sessions rotate <id>           start a fresh session for the conversation bound to <id>
  pairing list                   pending DM pairing codes
  pairing approve <code>         let that sender talk to the bot

options:
  --json                         machine-readable output
  -h, --help                     this text

The database comes from DATABASE_URL (default file:./data/switchboard.db).`;

export interface CliIO {
  out(line: string): void;
  err(line: string): void;
}

const stdio: CliIO = { out: (l) => process.stdout.write(l + "\n"), err: (l) => process.stderr.write(l + "\n") };

class UsageError extends Error {}

function infoView(i: Info) {
  return {
    id: i.id, kind: i.kind, agentId: i.agentId, userId: i.userId, groupId: i.groupId ?? null, channel: i.channel,
    title: i.title ?? null, persona: i.persona ?? null, parentId: i.parentId ?? null, turns: i.turnCount,
    archived: i.archived, createdAt: i.createdAt.toISOString(), lastActive: i.lastActive.toISOString(),
  };
}

function table(rows: Array<Record<string, unknown>>, cols: string[]): string[] {
  if (rows.length === 0) return ["(none)"];
  const w = cols.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c] ?? "").length)));
  const line = (vals: string[]) => vals.map((v, i) => v.padEnd(w[i]!)).join("  ").trimEnd();
  return [line(cols), ...rows.map((r) => line(cols.map((c) => String(r[c] ?? ""))))];
}

async function withDb<T>(config: Config, fn: (db: Database) => Promise<T>): Promise<T> {
  const db = await openDatabase({ url: config.DATABASE_URL });
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

export interface CliDeps {
  /** Builds the platform adapters for `serve` (given by the composition root, bin/switchboard.mjs). */
  adapters?: (config: Config) => import("./gateway/adapter.js").Adapter[];
}

export async function runCli(argv: string[], io: CliIO = stdio, env: NodeJS.ProcessEnv = process.env, deps: CliDeps = {}): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        json: { type: "boolean", default: false },
        help: { type: "boolean", short: "h", default: false },
        "dry-run": { type: "boolean", default: false },
        archived: { type: "boolean", default: false },
        user: { type: "string" },
        agent: { type: "string" },
        limit: { type: "string" },
        messages: { type: "string" },
      },
    });
  } catch (e) {
    io.err(`${(e as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const { values: o, positionals: [cmd, sub, arg] } = parsed;
  if (o.help || !cmd) {
    (o.help ? io.out : io.err)(USAGE);
    return o.help ? 0 : 2;
  }
  const emit = (json: unknown, human: string[]) => (o.json ? io.out(JSON.stringify(json, null, 2)) : human.forEach((l) => io.out(l)));

  let config: Config;
  try {
    config = loadConfig(env);
  } catch (e) {
    if (e instanceof ConfigError) {
      io.err(e.message);
      return 1;
    }
    throw e;
  }
  try {
    switch (cmd) {
      case "serve": {
        const { serve } = await import("./main.js");
        await serve(config, { adapters: deps.adapters });
        return 0;
      }
      case "migrate": {
        const r = await migrate(config.DATABASE_URL, { dryRun: o["dry-run"] });
        const names = o["dry-run"] ? r.pending : r.applied;
        emit(r, [names.length ? `${o["dry-run"] ? "Pending" : "Applied"}: ${names.join(", ")}` : "No pending migrations."]);
        return 0;
      }
      case "sessions":
        return await withDb(config, (db) => sessions(db, sub, arg, o, emit));
      case "pairing": {
        const { pairingCommand } = await import("./gateway/pairing-cli.js");
        return await withDb(config, (db) => pairingCommand(db, sub, arg, { emit, json: o.json }));
      }
      default:
        throw new UsageError(`unknown command "${cmd}"`);
    }
  } catch (e) {
    if (e instanceof UsageError) {
      io.err(`${e.message}\n\n${USAGE}`);
      return 2;
    }
    if (e instanceof SessionError) {
      o.json ? io.out(JSON.stringify({ error: { code: e.code, message: e.message } })) : io.err(`${e.code}: ${e.message}`);
      return 1;
    }
    io.err(`error: ${(e as Error).message}`);
    return 1;
  }
}

type Emit = (json: unknown, human: string[]) => void;

async function sessions(db: Database, sub: string | undefined, id: string | undefined, o: Record<string, unknown>, emit: Emit): Promise<number> {
  const registry = new Registry(new SessionStore(db));
  const need = () => {
    if (!id) throw new UsageError(`sessions ${sub} needs a session id`);
    return id;
  };
  switch (sub) {
    case "list": {
      const limit = o.limit ? Number(o.limit) : 50;
      if (!Number.isInteger(limit) || limit < 1) throw new UsageError("--limit must be a positive whole number");
      const list = await registry.listAll({ userId: o.user as string | undefined, agentId: o.agent as string | undefined, includeArchived: !!o.archived, limit });
      emit(list.map(infoView), table(list.map(infoView), ["id", "kind", "turns", "archived", "lastActive", "channel"]));
      return 0;
    }
    case "show": {
      const info = await registry.getUnscoped(need());
      const n = o.messages ? Number(o.messages) : 20;
      const messages = await new TranscriptStore(db).recent(info.id, n);
      const bindings = await registry.store.bindingsForSession(info.id);
      const view = { ...infoView(info), metadata: info.metadata, bound: bindings.map((b) => b.key), messages: messages.map((m) => ({ seq: m.seq, role: m.role, content: m.content })) };
      emit(view, [
        ...Object.entries(infoView(info)).map(([k, v]) => `${k.padEnd(11)} ${v ?? ""}`),
        `${"bound".padEnd(11)} ${bindings.length ? "yes (current session of its conversation)" : "no"}`,
        "",
        ...messages.map((m) => `#${m.seq} ${m.role}: ${m.content}`),
      ]);
      return 0;
    }
    case "archive": {
      const info = await registry.getUnscoped(need());
      const archived = await registry.archive({ userId: info.userId, agentId: info.agentId }, info.id);
      emit(infoView(archived), [`archived ${archived.id}`]);
      return 0;
    }
    case "rotate": {
      const r = await registry.rotateBound(need());
      emit({ previous: r.previous ? infoView(r.previous) : null, current: infoView(r.current) }, [`rotated ${r.previous?.id ?? "(none)"} -> ${r.current.id}`]);
      return 0;
    }
    default:
      throw new UsageError(sub ? `unknown sessions command "${sub}"` : "sessions needs a command: list, show, archive or rotate");
  }
}

export { registerSecret, createLogger };
