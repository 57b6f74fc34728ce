import { StoreError } from "./errors.js";
import type { Sql } from "./sql.js";
import type { Dialect } from "./prepared.js";
import { bindingIn, insertBinding, insertSession, sessionIn, type BindingRecord, type NewBinding, type SessionRecord } from "./session-rows.js";

export interface RotateInput {
  binding: NewBinding;
  /** Compare-and-rotate: the session the caller believes is current. */
  expectedSessionId?: string;
  successor: SessionRecord;
  /** Recorded on the session that ends (new, reset, rotate, ...). */
  reason?: string;
  /**
   * The inbound event that asked for the rotation. Every other unhandled
   * event of its conversation recorded before the rotation commits is
   * stamped with the session it arrived under (arrivalSessionId), so a
   * `/new` among them compares against that session, not the successor.
   */
  stampInbound?: string;
}

export interface RotateResult {
  previous: SessionRecord | null;
  current: SessionRecord;
  binding: BindingRecord;
}

/**
 * Archives the binding's current session and makes `input.successor` current,
 * inside the caller's transaction `s` (SessionStore.rotate).
 */
export async function rotateIn(db: Dialect, s: Sql, input: RotateInput): Promise<RotateResult> {
  const q = db.q;
  const now = new Date();
  const key = input.binding.key;
  const current = await insertSession(db, s, input.successor);
  const existing = await bindingIn(db, s, key);
  if (!existing) {
    if (input.expectedSessionId) throw new StoreError("Stale", `binding ${key} does not exist yet`);
    const binding = await insertBinding(db, s, input.binding, current.id, now);
    return { previous: null, current, binding };
  }
  const expected = input.expectedSessionId ?? existing.sessionId;
  const moved = await s.run(
    q
      .updateTable("Binding")
      .set((eb) => ({ sessionId: current.id, version: eb("version", "+", 1), updatedAt: now }))
      .where("key", "=", key)
      .where("sessionId", "=", expected),
  );
  if (moved !== 1) throw new StoreError("Stale", `binding ${key} no longer points at ${expected}`);
  await s.run(
    q
      .updateTable("Session")
      .set({ archived: true, archivedAt: now, endReason: input.reason ?? "rotate" })
      .where("id", "=", expected)
      .where("archived", "=", false),
  );
  if (input.stampInbound) {
    // Committed with the move: an event recorded before it arrived under `expected`; one recorded after finds no stamp and the binding as it is.
    await s.run(
      q
        .updateTable("InboundEvent")
        .set({ arrivalSessionId: expected })
        .where("conversation", "=", (eb) => eb.selectFrom("InboundEvent").select("conversation").where("id", "=", input.stampInbound!))
        .where("status", "=", "received")
        .where("arrivalSessionId", "is", null)
        .where("id", "<>", input.stampInbound),
    );
  }
  const previous = await sessionIn(db, s, expected);
  const binding = (await bindingIn(db, s, key))!;
  return { previous, current, binding };
}

/**
 * Points binding `key` at `targetId` where it still points at
 * `expectedSessionId` (else Stale), inside the caller's transaction `q`: the
 * target is active again and the session left is archived (SessionStore.repoint).
 */
export async function repointIn(db: Dialect, q: Sql, key: string, expectedSessionId: string, targetId: string): Promise<BindingRecord> {
  const b = db.q;
  const now = new Date();
  const moved = await q.run(
    b
      .updateTable("Binding")
      .set((eb) => ({ sessionId: targetId, version: eb("version", "+", 1), updatedAt: now }))
      .where("key", "=", key)
      .where("sessionId", "=", expectedSessionId),
  );
  if (moved !== 1) throw new StoreError("Stale", `binding ${key} no longer points at ${expectedSessionId}`);
  await q.run(b.updateTable("Session").set({ archived: false, archivedAt: null, endReason: null, lastActive: now }).where("id", "=", targetId));
  await q.run(
    b.updateTable("Session").set({ archived: true, archivedAt: now, endReason: "resume" }).where("id", "=", expectedSessionId).where("archived", "=", false),
  );
  const [binding] = await q.all(b.selectFrom("Binding").selectAll().where("key", "=", key));
  return binding!;
}
