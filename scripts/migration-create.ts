// Creates a new Prisma-format migration for BOTH providers, offline.
//
//   npm run db:migration:create -- <name>
//
// The Prisma CLI's `migrate dev` needs the Rust schema engine, which it would
// download. This drives @prisma/schema-engine-wasm through a driver adapter
// instead: it diffs the committed migrations (replayed on a shadow database)
// against prisma/models.prisma and writes
// prisma/<provider>/migrations/<timestamp>_<name>/migration.sql.
//
// SQLite needs nothing. PostgreSQL uses MIGRATION_PG_URL when set, or starts a
// throwaway cluster (tools/pg-cluster.ts).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import { pathToFileURL, fileURLToPath } from "node:url";
import { bindMigrationAwareSqlAdapterFactory } from "@prisma/driver-adapter-utils";
import { startPgCluster } from "../tools/pg-cluster.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(import.meta.url);
type Provider = "sqlite" | "postgresql";

let engineClass: any;
async function loadSchemaEngine(): Promise<any> {
  if (engineClass) return engineClass;
  // Node 20 cannot import .wasm modules without a flag: instantiate by hand.
  (globalThis as any).PRISMA_WASM_PANIC_REGISTRY ??= {
    message: "",
    set_message(m: string) {
      this.message = `RuntimeError: ${m}`;
    },
    get() {
      return this.message;
    },
  };
  const bgPath = require.resolve("@prisma/schema-engine-wasm/schema_engine_bg");
  const bg: any = await import(pathToFileURL(bgPath).href);
  const mod = new (globalThis as any).WebAssembly.Module(fs.readFileSync(bgPath.replace(/\.js$/, ".wasm")));
  const inst = new (globalThis as any).WebAssembly.Instance(mod, { "./schema_engine_bg.js": bg });
  bg.__wbg_set_wasm(inst.exports);
  (inst.exports as any).__wbindgen_start();
  engineClass = bg.SchemaEngine;
  return engineClass;
}

function schemaFiles(provider: Provider) {
  const dir = path.join(root, "prisma", provider);
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith(".prisma"))
    .sort()
    .map((f) => ({ path: path.join(dir, f), content: fs.readFileSync(path.join(dir, f), "utf8") }));
}

function listMigrations(dir: string) {
  const lockfile = {
    path: "migration_lock.toml",
    content: fs.existsSync(path.join(dir, "migration_lock.toml")) ? fs.readFileSync(path.join(dir, "migration_lock.toml"), "utf8") : null,
  };
  const entries = fs.existsSync(dir) ? fs.readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()) : [];
  const migrationDirectories = entries
    .map((e) => ({
      path: e.name,
      migrationFile: { path: "migration.sql", content: { tag: "ok", value: fs.readFileSync(path.join(dir, e.name, "migration.sql"), "utf8") } },
    }))
    .sort((a, b) => a.path.localeCompare(b.path));
  return { baseDir: dir, lockfile, migrationDirectories, shadowDbInitScript: "" };
}

async function adapterFactory(provider: Provider, url: string): Promise<any> {
  if (provider === "sqlite") {
    const { PrismaBetterSqlite3 } = await import("@prisma/adapter-better-sqlite3");
    const inner: any = new PrismaBetterSqlite3({ url });
    return {
      provider: inner.provider,
      adapterName: inner.adapterName,
      connect: () => inner.connect(),
      // The engine replays each migration file with executeRaw; better-sqlite3's
      // prepare() rejects multi-statement SQL, so route argument-less calls to executeScript.
      async connectToShadowDb() {
        const shadow = await inner.connectToShadowDb();
        const executeRaw = shadow.executeRaw.bind(shadow);
        shadow.executeRaw = async (q: any) => (q.args?.length ? executeRaw(q) : (await shadow.executeScript(q.sql), 0));
        return shadow;
      },
    };
  }
  const { PrismaPg } = await import("@prisma/adapter-pg");
  const u = new URL(url);
  const cfg = {
    host: u.hostname,
    port: Number(u.port || 5432),
    user: decodeURIComponent(u.username),
    password: decodeURIComponent(u.password) || undefined,
    database: u.pathname.slice(1),
  };
  const inner: any = new PrismaPg(cfg);
  // Introspection reads catalog columns of type "char" (OID 18), which adapter-pg
  // cannot decode: report them as TEXT; the values are already strings.
  const probe = await inner.connect();
  const proto = Object.getPrototypeOf(Object.getPrototypeOf(probe));
  await probe.dispose();
  if (!proto.__switchboardCharPatch) {
    const performIO = proto.performIO;
    proto.performIO = async function (query: unknown) {
      const r = await performIO.call(this, query);
      for (const f of r?.fields ?? []) if (f.dataTypeID === 18) f.dataTypeID = 25;
      return r;
    };
    proto.__switchboardCharPatch = true;
  }
  return {
    provider: inner.provider,
    adapterName: inner.adapterName,
    connect: () => inner.connect(),
    // adapter-pg drops the shadow database before closing its pool; do it in the right order.
    async connectToShadowDb() {
      const admin = await inner.connect();
      const name = `prisma_migrate_shadow_db_${globalThis.crypto.randomUUID()}`;
      await admin.executeScript(`CREATE DATABASE "${name}"`);
      const shadow = await new PrismaPg({ ...cfg, database: name }).connect();
      const dispose = shadow.dispose.bind(shadow);
      shadow.dispose = async () => {
        await dispose();
        await admin.executeScript(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
        await admin.dispose();
      };
      return shadow;
    },
  };
}

async function createFor(provider: Provider, url: string, name: string, stamp: string): Promise<string | null> {
  const SchemaEngine = await loadSchemaEngine();
  const files = schemaFiles(provider);
  const dir = path.join(root, "prisma", provider, "migrations");
  fs.mkdirSync(dir, { recursive: true });
  const lock = path.join(dir, "migration_lock.toml");
  if (!fs.existsSync(lock)) {
    fs.writeFileSync(
      lock,
      `# Please do not edit this file manually\n# It should be added in your version-control system (e.g., Git)\nprovider = "${provider}"\n`,
    );
  }
  const factory = bindMigrationAwareSqlAdapterFactory(await adapterFactory(provider, url));
  const engine = await SchemaEngine.new({ datamodels: files.map((f) => [f.path, f.content]) }, () => {}, factory);
  try {
    const r = await engine.diff({
      from: { tag: "migrations", ...listMigrations(dir) },
      to: { tag: "schemaDatamodel", files },
      script: true,
      exitCode: null,
      filters: { externalTables: [], externalEnums: [] },
    });
    const script: string = r.stdout ?? "";
    if (/^-- This is an empty migration\.\s*$/.test(`${script.trim()}\n`)) return null;
    const out = path.join(dir, `${stamp}_${name}`);
    fs.mkdirSync(out);
    fs.writeFileSync(path.join(out, "migration.sql"), script);
    return path.relative(root, out);
  } finally {
    engine.free();
  }
}

async function main() {
  const raw = process.argv[2];
  if (!raw) {
    console.error("usage: npm run db:migration:create -- <name>   (edit prisma/models.prisma first)");
    process.exit(2);
  }
  const name = raw.replace(/[^A-Za-z0-9_]/g, "_");
  const stamp = new Date().toISOString().replace(/[-:T]/g, "").slice(0, 14);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "switchboard-migrate-"));
  const made: string[] = [];
  const sqlite = await createFor("sqlite", `file:${path.join(tmp, "shadow-main.db")}`, name, stamp);
  if (sqlite) made.push(sqlite);
  const cluster = process.env.MIGRATION_PG_URL ? null : await startPgCluster();
  try {
    const pgUrl = process.env.MIGRATION_PG_URL ?? (await cluster!.createDatabase("migration_authoring"));
    const pg = await createFor("postgresql", pgUrl, name, stamp);
    if (pg) made.push(pg);
  } finally {
    cluster?.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  console.log(made.length ? `Created:\n  ${made.join("/migration.sql\n  ")}/migration.sql` : "No schema changes: no migration created.");
  process.exit(0); // the engine keeps driver pools open
}

main().catch((e) => {
  console.error(`migration create failed: ${e?.message ?? e}`);
  process.exit(1);
});
