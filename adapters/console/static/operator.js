// The operator pane: sessions, bindings, Slack installations, usage (usage.js), a session's transcript and the live log, from the operator
// API; and the open chat's current session, which the sessions table marks.
import { $, el, setStatus, time } from "./dom.js";
import { api } from "./api.js";
import { state } from "./state.js";
import { loadUsage } from "./usage.js";

function cell(text, cls) {
  return el("td", { class: cls, text });
}

export async function loadSessions() {
  const archived = $("show-archived").checked ? 1 : 0;
  const { sessions } = await api(`/api/sessions?archived=${archived}&limit=100`);
  const body = $("sessions-body");
  body.replaceChildren();
  for (const s of sessions) {
    const open = el("button", { type: "button", class: "link mono", text: s.id, title: `Read the transcript of ${s.id}` });
    open.addEventListener("click", () => loadTranscript(s.id));
    const tr = el(
      "tr",
      { "data-session-id": s.id, "data-archived": String(s.archived) },
      el("td", {}, open),
      cell(s.kind),
      cell(String(s.turnCount), "num"),
      cell(s.archived ? "yes" : "no"),
      cell(s.channel, "mono"),
    );
    body.append(tr);
  }
  markCurrentRow();
}

function markCurrentRow() {
  for (const tr of $("sessions-body").children) {
    if (tr.dataset.sessionId === state.currentSessionId) tr.dataset.current = "true";
    else delete tr.dataset.current;
  }
}

/** The open chat's current session (its binding's), shown above the chat and marked in the sessions table. */
export async function updateCurrentSession() {
  const out = $("current-session");
  const address = state.address;
  if (!address) return;
  const seq = ++state.sessionSeq;
  try {
    const { bindings } = await api(`/api/bindings?channel=${encodeURIComponent(address.channel)}`);
    if (seq !== state.sessionSeq || address !== state.address) return;
    const id = bindings[0] ? bindings[0].sessionId : "";
    state.currentSessionId = id;
    out.textContent = id || "none yet";
    out.dataset.sessionId = id;
    markCurrentRow();
  } catch (err) {
    out.textContent = `unknown (${err.message})`;
  }
}

async function loadBindings() {
  const { bindings } = await api("/api/bindings?limit=100");
  const body = $("bindings-body");
  body.replaceChildren();
  for (const b of bindings) {
    const open = el("button", { type: "button", class: "link mono", text: b.sessionId });
    open.addEventListener("click", () => loadTranscript(b.sessionId));
    body.append(el("tr", { "data-session-id": b.sessionId }, cell(b.channel, "mono"), cell(b.scope), el("td", {}, open), cell(String(b.version), "num")));
  }
}

/**
 * The Slack workspaces (and Enterprise Grid orgs) the app is installed in; the section stays hidden
 * where the gateway has no such list (no Slack installs by OAuth): its 404 is no error of the page.
 */
async function loadSlackInstallations() {
  const section = $("slack-installations");
  let installations;
  try {
    ({ installations } = await api("/api/slack/installations"));
  } catch {
    section.hidden = true;
    return;
  }
  section.hidden = false;
  const body = $("slack-installations-body");
  body.replaceChildren();
  for (const i of installations) {
    const team = i.orgWide ? `${i.enterpriseId} (org)` : i.teamId;
    const expires = i.expiresAt ? new Date(i.expiresAt).toLocaleString() : "does not expire";
    body.append(
      el(
        "tr",
        { "data-team": i.orgWide ? i.enterpriseId : i.teamId },
        cell(team, "mono"),
        cell(i.name || "-"),
        cell(i.botUserId, "mono"),
        cell(new Date(i.installedAt).toLocaleString()),
        cell(expires),
      ),
    );
  }
  if (!installations.length) body.append(el("tr", {}, el("td", { class: "muted", colSpan: 5, text: "None yet: install the app from /slack/install." })));
}

async function loadTranscript(id) {
  state.selectedSession = id;
  const info = $("transcript-info");
  const list = $("transcript-messages");
  try {
    const r = await api(`/api/sessions/${encodeURIComponent(id)}`);
    if (state.selectedSession !== id) return;
    const s = r.session;
    $("transcript").dataset.sessionId = s.id;
    const facts = [`${s.kind}`, s.archived ? "archived" : "active", `${s.turnCount} turns`, `${r.messageCount} messages`];
    if (s.parentId) facts.push(`parent ${s.parentId}`);
    if (r.bindings.length) facts.push(`bound to ${r.bindings.map((b) => b.channel).join(", ")}`);
    info.replaceChildren(el("code", { class: "mono", text: s.id }), document.createTextNode(` · ${facts.join(" · ")}`));
    list.replaceChildren();
    for (const m of r.messages) {
      list.append(
        el(
          "li",
          { class: `tmsg ${m.role}`, "data-role": m.role },
          el("span", { class: "role", text: m.speaker ? `${m.role} (${m.speaker})` : m.role }),
          el("span", { class: "text", text: m.content }),
        ),
      );
    }
    if (!r.messages.length) list.append(el("li", { class: "muted", text: "No messages yet." }));
  } catch (err) {
    if (state.selectedSession === id) info.textContent = `Could not load ${id}: ${err.message}`;
  }
}

export async function refresh() {
  const jobs = [loadSessions(), loadBindings(), updateCurrentSession(), loadSlackInstallations(), loadUsage()];
  if (state.selectedSession) jobs.push(loadTranscript(state.selectedSession));
  const results = await Promise.allSettled(jobs);
  const failed = results.find((r) => r.status === "rejected");
  if (failed) setStatus(`Operator data could not be loaded: ${failed.reason.message}`, "error");
}

/** Events come in bursts (a turn emits several): one refresh per burst is enough. */
export function scheduleRefresh() {
  clearTimeout(state.refreshTimer);
  state.refreshTimer = setTimeout(refresh, 150);
}

export function logEvent(e) {
  const prev = e.detail && e.detail.previousId ? String(e.detail.previousId) : "";
  let text;
  if (e.phase === "rotated") text = `rotated ${prev} → ${e.sessionId}`;
  else if (e.phase === "switched") text = `switched ${prev} → ${e.sessionId}`;
  else text = `${e.phase} ${e.sessionId}`;
  const li = el(
    "li",
    { "data-phase": e.phase, "data-session-id": e.sessionId, "data-previous-id": prev },
    el("time", { text: time(e.at) }),
    el("span", { text: ` ${text}` }),
  );
  $("log").prepend(li);
  while ($("log").children.length > 200) $("log").lastElementChild.remove();
}
