import { parseArgs } from "node:util";
import { ConfigError, loadConfig, loadConfigLenient, type Config } from "./config.js";
import { CliError, EXIT, exitQuietlyWhenTheReaderLeaves, Output, stdio, type CliIO } from "./cli/output.js";
import { version } from "./cli/version.js";

export type { CliIO };

/**
 * `switchboard <command>`: the operator's CLI. Every command accepts --json
 * for scripts (one JSON document on stdout, errors included); human output
 * is a short table. Exit codes: 0 ok, 1 failure, 2 usage error. Commands
 * load only what they use: a `sessions list` never loads Prisma, an SDK or
 * the gateway.
 */
const USAGE = `usage: switchboard <command> [options]

commands:
  serve                          run the gateway (what \`npm start\` does)
  doctor [--timeout 10s]         check the configuration and every dependency with real calls
  migrate [--dry-run]            create the database or apply pending migrations
  sessions list [--user platform:id] [--agent ID] [--archived] [--limit N]
  sessions show <id> [--messages N]
  sessions archive <id>
  sessions rotate <id>           start a fresh session for the conversation bound to <id>
  pairing list                   pending DM pairing codes
  pairing approve <code>         let that sender talk to the bot
  pairing groups                 groups admitted by an admin's /allowgroup
  pairing revoke-group <p:chat>  withdraw a group's admission
  schedule list [--all]          scheduled jobs with their next and last run and status
  schedule add (--session ID | --platform P --chat ID [--thread ID] [--bot ID])
               (--at ISO | --in 10m | --every 1h | --cron '0 9 * * 1-5') [--tz ZONE] [--action text|agent] --text TEXT
  schedule cancel <id>
  slack installations            the Slack workspaces (and Enterprise Grid orgs) the app is installed in; never a token
  slack uninstall <team> [--purge]
                                 delete a workspace's (T…) or org's (E…) installation; --purge (or
                                 SLACK_PURGE_ON_UNINSTALL=true) also deletes its sessions and transcripts
  slack manifest                 the Slack app manifest (JSON) for this deployment: create the app from it
  usage [--by user|chat|agent|workspace|model] [--since today|month|7d|2026-12-01]
                                 model tokens and cost from the usage rows (default: this month, DEFAULT_TIMEZONE)
  budgets [list]                 every budget counter of the current day or month: spent, reserved, limit, reset time
  budgets reset <budget> [scope] set a budget's spent back to 0 for this period (one scope, or all)
  logout-all                     sign every console session out (every browser signs in again)
  help                           this text

options:
  --json                         one JSON document on stdout: the result, or {"ok":false,"error":{"code","message"}}
  -h, --help                     this text
  --version                      the version of switchboard

The database comes from DATABASE_URL (default file:./data/switchboard.db).
Only serve and migrate create it; other commands report a missing one.`;

export interface CliDeps {
  /** Builds the platform adapters for `serve` (given by the composition root, bin/switchboard.mjs). */
  adapters?: (config: Config) => import("./gateway/adapter.js").Adapter[];
  /** How the compiled build was loaded (bin/load-build.mjs); absent when run from the sources. */
  codeCache?: import("./code-cache.js").CodeCache;
  /** Builds the Slack app manifest for `slack manifest` (adapters/slack/manifest.ts, given by the composition root). */
  slackManifest?: import("./cli/slack.js").SlackManifestBuilder;
}

const OPTIONS = {
  json: { type: "boolean", default: false },
  help: { type: "boolean", short: "h", default: false },
  version: { type: "boolean", default: false },
  "dry-run": { type: "boolean", default: false },
  archived: { type: "boolean", default: false },
  user: { type: "string" },
  agent: { type: "string" },
  limit: { type: "string" },
  messages: { type: "string" },
  timeout: { type: "string" },
  // schedule add / list
  session: { type: "string" },
  platform: { type: "string" },
  chat: { type: "string" },
  thread: { type: "string" },
  bot: { type: "string" },
  at: { type: "string" },
  in: { type: "string" },
  every: { type: "string" },
  cron: { type: "string" },
  tz: { type: "string" },
  text: { type: "string" },
  action: { type: "string" },
  all: { type: "boolean", default: false },
  // slack uninstall
  purge: { type: "boolean", default: false },
  // usage
  by: { type: "string" },
  since: { type: "string" },
} as const;

/** `slack installations | uninstall <team> [--purge] | manifest` (the manifest's builder comes from the composition root). */
async function slack(config: Config, deps: CliDeps, sub: string | undefined, arg: string | undefined, purge: boolean, out: Output): Promise<number> {
  const [{ withExistingDatabase }, { slackCommand }] = await Promise.all([import("./cli/database.js"), import("./cli/slack.js")]);
  return slackCommand(config, { withDb: (fn) => withExistingDatabase(config, fn), manifest: deps.slackManifest }, sub, arg, { purge }, out);
}

/** `usage [--by] [--since]` and `budgets [list] | reset <budget> [scope]` (issue 29). */
async function usage(config: Config, cmd: "usage" | "budgets", args: (string | undefined)[], o: { by?: string; since?: string }, out: Output): Promise<number> {
  const [{ withExistingDatabase }, { usageCommand, budgetsCommand }] = await Promise.all([import("./cli/database.js"), import("./cli/usage.js")]);
  const [sub, name, scope] = args;
  if (cmd === "usage" && sub) throw new CliError("Usage", `unexpected argument "${sub}"`, EXIT.usage);
  return withExistingDatabase(config, (db) => (cmd === "usage" ? usageCommand(db, config, o, out) : budgetsCommand(db, config, sub, name, scope, out)));
}

export async function runCli(argv: string[], io: CliIO = stdio, env: NodeJS.ProcessEnv = process.env, deps: CliDeps = {}): Promise<number> {
  let parsed: ReturnType<typeof parseArgs<{ args: string[]; allowPositionals: true; options: typeof OPTIONS }>>;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  } catch (e) {
    // --json must hold even when the rest of the line does not parse.
    return new Output(io, argv.includes("--json")).fail("Usage", (e as Error).message, EXIT.usage, USAGE);
  }
  const {
    values: o,
    positionals: [cmd, sub, arg, ...extra],
  } = parsed;
  const out = new Output(io, o.json);
  if (io === stdio && cmd !== "serve") exitQuietlyWhenTheReaderLeaves();
  if (o.help || cmd === "help") return out.ok({ usage: USAGE }, [USAGE]);
  if (o.version) return out.ok({ version }, [`switchboard ${version}`]);
  if (!cmd) return out.fail("Usage", "no command given", EXIT.usage, USAGE);

  let config: Config;
  let problems: ConfigError[] = [];
  try {
    // doctor diagnoses a configuration the gateway would refuse, so it reads it leniently.
    if (cmd === "doctor") ({ config, problems } = loadConfigLenient(env));
    else config = loadConfig(env);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    // One line naming the variable, as the gateway prints it.
    if (o.json) return out.fail("Config", e.message);
    io.err(e.message);
    return EXIT.failed;
  }
  try {
    // `budgets reset <budget> [scope]` is the one command with a third argument.
    const allowed = cmd === "budgets" && sub === "reset" ? 1 : 0;
    if (extra.length > allowed) throw new CliError("Usage", `unexpected argument "${extra[allowed]}"`, EXIT.usage);
    switch (cmd) {
      case "serve": {
        const { serve } = await import("./main.js");
        await serve(config, { adapters: deps.adapters, codeCache: deps.codeCache });
        return EXIT.ok;
      }
      case "doctor": {
        const { doctorCommand } = await import("./doctor/index.js");
        return await doctorCommand(config, env, { timeout: o.timeout }, out, problems);
      }
      case "migrate": {
        const { migrate } = await import("./store/migrate.js");
        const r = await migrate(config.DATABASE_URL, { dryRun: o["dry-run"] });
        const names = o["dry-run"] ? r.pending : r.applied;
        return out.ok(r, [names.length ? `${o["dry-run"] ? "Pending" : "Applied"}: ${names.join(", ")}` : "No pending migrations."]);
      }
      case "sessions": {
        const [{ withExistingDatabase }, { sessionsCommand }] = await Promise.all([import("./cli/database.js"), import("./cli/sessions.js")]);
        return await withExistingDatabase(config, (db) => sessionsCommand(db, sub, arg, o, out));
      }
      case "pairing": {
        const [{ withExistingDatabase }, { pairingCommand }] = await Promise.all([import("./cli/database.js"), import("./cli/pairing.js")]);
        return await withExistingDatabase(config, (db) => pairingCommand(db, sub, arg, out));
      }
      case "usage":
      case "budgets":
        return await usage(config, cmd, [sub, arg, extra[0]], o, out);
      case "schedule": {
        const [{ withExistingDatabase }, { scheduleCommand }] = await Promise.all([import("./cli/database.js"), import("./cli/schedule.js")]);
        return await withExistingDatabase(config, (db) => scheduleCommand(db, config, sub, arg, o, out));
      }
      case "slack":
        return await slack(config, deps, sub, arg, o.purge, out);
      case "logout-all": {
        const [{ withExistingDatabase }, { logoutAllCommand }] = await Promise.all([import("./cli/database.js"), import("./cli/logout-all.js")]);
        return await withExistingDatabase(config, (db) => logoutAllCommand(db, out));
      }
      default:
        throw new CliError("Usage", `unknown command "${cmd}"`, EXIT.usage);
    }
  } catch (e) {
    return failed(e, out, io, o.json === true);
  }
}

/** A command's failure as the operator reads it: a usage error with the usage, a coded error with its code, a configuration error as one line. */
function failed(e: unknown, out: Output, io: CliIO, json: boolean): number {
  if (e instanceof CliError) return out.fail(e.code, e.message, e.exit, e.exit === EXIT.usage ? USAGE : undefined);
  const coded = e as { name?: string; code?: unknown; message?: string };
  // An invalid AGENTS_CONFIG is a configuration error: one line naming the agent (or route) and the field, as ConfigError prints.
  if (coded.name === "AgentsConfigError") {
    if (json) return out.fail("Config", coded.message ?? String(e));
    io.err(coded.message ?? String(e));
    return EXIT.failed;
  }
  // Domain and store errors carry a stable code and a message that says what to do.
  if ((coded.name === "SessionError" || coded.name === "StoreError") && typeof coded.code === "string") return out.fail(coded.code, coded.message ?? String(e));
  return out.fail("Failed", (e as Error).message ?? String(e));
}
