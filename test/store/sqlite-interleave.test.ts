import { randomUUID } from "node:crypto";
import { PrismaBetterSqlite3 } from "@prisma/adapter-better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { PrismaClient } from "../../src/store/generated/sqlite/client.js";
import { migrate, openDatabase } from "../../src/store/index.js";
import { freshDatabaseUrl } from "../support/db.js";
import { prisma } from "../support/prisma.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The pitfall (shared/reference/prisma-offline/src/sqlite-interleave.ts): the
 * better-sqlite3 adapter shares one connection, so a plain write issued while
 * another caller's interactive transaction is open joins that transaction and
 * is silently rolled back with it.
 */
describe("SQLite: no write is lost to another caller's rolled-back transaction", () => {
  const closers: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of closers.splice(0)) await c();
  });

  function session(id: string) {
    return { id, agentId: "a", userId: "u", channel: "c", kind: "chat" };
  }

  it("reproduces the pitfall with a bare PrismaClient (the hazard is real)", async () => {
    const url = await freshDatabaseUrl("sqlite");
    await migrate(url);
    const client = new PrismaClient({ adapter: new PrismaBetterSqlite3({ url }) });
    closers.push(() => client.$disconnect());
    const x = randomUUID();
    const y = randomUUID();
    let inside!: () => void;
    const txOpen = new Promise<void>((r) => (inside = r));
    const tx = client
      .$transaction(async (t) => {
        await t.session.create({ data: session(x) });
        inside();
        await sleep(150);
        throw new Error("force rollback");
      })
      .catch(() => "rolled back");
    await txOpen; // the other caller's transaction is open and has written
    await client.session.create({ data: session(y) }); // an unrelated caller's write, outside the transaction
    expect(await tx).toBe("rolled back");
    const survived = await client.session.findUnique({ where: { id: y } });
    expect(survived).toBeNull(); // lost: it went down with the other caller's transaction
  });

  it("Switchboard's Database serializes callers, so the same interleaving loses nothing", async () => {
    const url = await freshDatabaseUrl("sqlite");
    await migrate(url);
    const db = await openDatabase({ url, migrate: false });
    closers.push(() => db.close());
    const x = randomUUID();
    const y = randomUUID();
    let inside!: () => void;
    const txOpen = new Promise<void>((r) => (inside = r));
    const tx = prisma(db)
      .transaction("doomed", async (t) => {
        await t.session.create({ data: session(x) });
        inside();
        await sleep(150);
        throw new Error("force rollback");
      })
      .catch(() => "rolled back");
    await txOpen;
    const write = prisma(db).write((c) => c.session.create({ data: session(y) }));
    expect(await tx).toBe("rolled back");
    await write;
    expect(await prisma(db).read((c) => c.session.findUnique({ where: { id: y } }))).not.toBeNull();
    expect(await prisma(db).read((c) => c.session.findUnique({ where: { id: x } }))).toBeNull();
  });

  it("a reader never sees another caller's uncommitted rows", async () => {
    const url = await freshDatabaseUrl("sqlite");
    await migrate(url);
    const db = await openDatabase({ url, migrate: false });
    closers.push(() => db.close());
    const x = randomUUID();
    let inside!: () => void;
    const txOpen = new Promise<void>((r) => (inside = r));
    const tx = prisma(db)
      .transaction("doomed", async (t) => {
        await t.session.create({ data: session(x) });
        inside();
        await sleep(100);
        throw new Error("force rollback");
      })
      .catch(() => "rolled back");
    await txOpen;
    const seen = await prisma(db).read((c) => c.session.findUnique({ where: { id: x } }));
    expect(await tx).toBe("rolled back");
    expect(seen).toBeNull();
  });
});
