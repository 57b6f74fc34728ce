import { speakerFromMeta, speakerName } from "../runtime/speaker.js";
import type { Database } from "../store/db.js";
import { parseToolMeta } from "../runtime/tool-rounds.js";
import { IdentityStore } from "../store/identities.js";
import { SessionStore } from "../store/sessions.js";
import { TranscriptStore } from "../store/transcript.js";
import { Registry, type Info } from "../session/index.js";
import { CliError, usageError, type Output } from "./output.js";

export interface SessionsOptions {
  user?: string;
  agent?: string;
  archived?: boolean;
  limit?: string;
  messages?: string;
}

function infoView(i: Info) {
  return {
    id: i.id,
    kind: i.kind,
    agentId: i.agentId,
    userId: i.userId,
    groupId: i.groupId ?? null,
    channel: i.channel,
    title: i.title ?? null,
    persona: i.persona ?? null,
    parentId: i.parentId ?? null,
    turns: i.turnCount,
    archived: i.archived,
    createdAt: i.createdAt.toISOString(),
    lastActive: i.lastActive.toISOString(),
  };
}

export function table(rows: Array<Record<string, unknown>>, cols: string[]): string[] {
  if (rows.length === 0) return ["(none)"];
  const w = cols.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c] ?? "").length)));
  const line = (vals: string[]) =>
    vals
      .map((v, i) => v.padEnd(w[i]!))
      .join("  ")
      .trimEnd();
  return [line(cols), ...rows.map((r) => line(cols.map((c) => String(r[c] ?? ""))))];
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * --user: `platform:externalId` (the id the platform shows, e.g.
 * `telegram:5012345678`, `slack:U0ALICE`, `console:alice`), resolved through
 * the identity tables; a group chat's id names the group's sessions. The
 * internal UUID is still accepted.
 */
export async function resolveUser(db: Database, user: string): Promise<string> {
  if (UUID.test(user)) return user;
  const at = user.indexOf(":");
  if (at <= 0 || at === user.length - 1) {
    throw usageError(`--user wants platform:externalId (for example telegram:5012345678 or slack:U0ALICE) or an internal user id; got "${user}"`);
  }
  const found = await new IdentityStore(db).lookup(user.slice(0, at), user.slice(at + 1));
  if (!found)
    throw new CliError("NotFound", `No user or group ${user} is known: they appear once they have messaged the bot. Check the platform name and the id.`);
  return found.id;
}

export async function sessionsCommand(db: Database, sub: string | undefined, id: string | undefined, o: SessionsOptions, out: Output): Promise<number> {
  const registry = new Registry(new SessionStore(db));
  const need = () => {
    if (!id) throw usageError(`sessions ${sub} needs a session id`);
    return id;
  };
  switch (sub) {
    case "list": {
      const limit = o.limit ? Number(o.limit) : 50;
      if (!Number.isInteger(limit) || limit < 1) throw usageError("--limit must be a positive whole number");
      const userId = o.user ? await resolveUser(db, o.user) : undefined;
      const list = (await registry.listAll({ userId, agentId: o.agent, includeArchived: !!o.archived, limit })).map(infoView);
      return out.ok(list, table(list, ["id", "kind", "turns", "archived", "lastActive", "channel"]));
    }
    case "show": {
      const info = await registry.getUnscoped(need());
      const n = o.messages ? Number(o.messages) : 20;
      if (!Number.isInteger(n) || n < 0) throw usageError("--messages must be a whole number");
      const messages = await new TranscriptStore(db).recent(info.id, n);
      const bindings = await registry.store.bindingsForSession(info.id);
      const messages_ = messages.map((m) => ({
        seq: m.seq,
        role: m.role,
        content: m.content,
        ...speakerField(m),
        ...(m.role === "tool" && { tool: parseToolMeta(m.meta) }),
      }));
      const view = { ...infoView(info), metadata: info.metadata, bound: bindings.map((b) => b.key), messages: messages_ };
      return out.ok(view, [
        ...Object.entries(infoView(info)).map(([k, v]) => `${k.padEnd(11)} ${v ?? ""}`),
        `${"bound".padEnd(11)} ${bindings.length ? "yes (current session of its conversation)" : "no"}`,
        "",
        ...messages.map((m) => `#${m.seq} ${m.role}${speakerField(m).speaker ? ` [${speakerField(m).speaker}]` : ""}: ${m.content}`),
      ]);
    }
    case "archive": {
      const info = await registry.getUnscoped(need());
      const archived = await registry.archive({ userId: info.userId, agentId: info.agentId }, info.id);
      return out.ok(infoView(archived), [`archived ${archived.id}`]);
    }
    case "rotate": {
      const r = await registry.rotateBound(need());
      return out.ok({ previous: r.previous ? infoView(r.previous) : null, current: infoView(r.current) }, [
        `rotated ${r.previous?.id ?? "(none)"} -> ${r.current.id}`,
      ]);
    }
    default:
      throw usageError(sub ? `unknown sessions command "${sub}"` : "sessions needs a command: list, show, archive or rotate");
  }
}

/** Who said a user entry, as the transcript records it (older entries have none). */
function speakerField(m: { role: string; meta: string | null }): { speaker?: string } {
  const speaker = m.role === "user" ? speakerName(speakerFromMeta(m.meta)) : undefined;
  return speaker ? { speaker } : {};
}
