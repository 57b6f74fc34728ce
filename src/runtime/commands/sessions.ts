/** What this chat's sessions are: /status (the current one) and /sessions (the list, and a search of their transcripts). */
import { METADATA_KEYS } from "../../agent/factory.js";
import type { Info } from "../../session/info.js";
import type { CommandOptions, CommandSpec } from "./spec.js";

const fmtDate = (d: Date) => `${d.toISOString().replace("T", " ").slice(0, 16)} UTC`;

const ENDED: Record<string, string> = {
  new: "ended by /new",
  reset: "ended by /reset",
  resume: "left by /resume",
  archive: "archived",
  rotate: "rotated by an operator",
  repair: "replaced after an archive",
};

/** One line of /sessions: its number, state and why it ended, turns, last activity, and the session it continues (lineage). */
function describeSession(s: Info, i: number, list: Info[], currentId: string): string {
  const state = s.id === currentId ? " (current)" : s.archived ? ` (archived: ${ENDED[s.endReason ?? "archive"] ?? "archived"})` : "";
  const parent = s.parentId ? list.findIndex((p) => p.id === s.parentId) : -1;
  const lineage = s.parentId ? `; follows ${parent >= 0 ? parent + 1 : s.parentId.slice(0, 8)}` : "";
  return `${i + 1}. ${s.id}${state}, ${s.turnCount} turns, ${fmtDate(s.lastActive)}${lineage}`;
}

export function statusCommand(opts: Pick<CommandOptions, "defaultModel" | "agentOf">): CommandSpec {
  return {
    name: "status",
    summary: "show this conversation's session",
    async run(ctx) {
      await ctx.can.refresh();
      const info = ctx.session.info;
      const sessions = await ctx.can.sessions(1000);
      const archived = sessions.filter((s) => s.archived).length;
      // The live session's info is from when it opened; the stored row has the turns since.
      const turns = sessions.find((s) => s.id === info.id)?.turnCount ?? info.turnCount;
      ctx.notify(
        "info",
        [
          `session: ${info.id}`,
          `turns: ${turns}`,
          `model: ${String(info.metadata[METADATA_KEYS.model] ?? (typeof opts.defaultModel === "function" ? opts.defaultModel(info) : opts.defaultModel) ?? "echo")}`,
          `persona: ${info.persona ?? "default"}`,
          ...(opts.agentOf ? [`agent: ${opts.agentOf(info)}`] : []),
          `started: ${fmtDate(info.createdAt)}`,
          `archived sessions: ${archived}`,
        ].join("\n"),
      );
    },
  };
}

export function sessionsCommand(opts: Pick<CommandOptions, "transcript">): CommandSpec {
  return {
    name: "sessions",
    summary: "list this chat's sessions, or search them",
    usage: "/sessions [search terms]",
    async run(ctx) {
      const list = await ctx.can.sessions();
      if (!ctx.args) {
        ctx.notify(
          "info",
          list.length ? `${list.map((s, i) => describeSession(s, i, list, ctx.session.id)).join("\n")}\nResume one with /resume <n>.` : "No sessions yet.",
        );
        return;
      }
      // Bounded: SQLite refuses LIKE patterns past a certain complexity, and nobody searches with a novel.
      const terms = ctx.args
        .split(/\s+/)
        .filter(Boolean)
        .slice(0, 8)
        .map((t) => t.slice(0, 100));
      const hits = await opts.transcript.search(
        list.map((s) => s.id),
        terms,
        10,
      );
      ctx.notify(
        "info",
        hits.length
          ? hits.map((h) => `${list.findIndex((s) => s.id === h.sessionId) + 1}. ${h.sessionId}: …${h.snippet}…`).join("\n")
          : `No session of this chat mentions ${terms.join(" ")}.`,
      );
    },
  };
}
