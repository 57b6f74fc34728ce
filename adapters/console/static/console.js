// The Switchboard console page. Vanilla JS, no build step.
// Every piece of text from a chat or the API is put in the page with
// textContent, never parsed as HTML: chat text is untrusted. The one
// exception is the bot's answers, which are Markdown: marked renders them
// with raw HTML escaped (a model's <img onerror> shows as text), and
// DOMPurify sanitizes the result into DOM nodes, so nothing the model writes
// can run (the page's CSP forbids inline script as well).

(() => {
  const $ = (id) => document.getElementById(id);

  const state = {
    mode: "private",
    participants: ["Alice", "Bob", "Carol"],
    speaker: "Alice",
    /** From GET /api/console/address: { chatId, threadId?, channel, botUsername }. */
    address: null,
    /** Resolves once `address` matches the form; sending waits on it. */
    addressReady: Promise.resolve(),
    addressSeq: 0,
    sessionSeq: 0,
    selectedSession: null,
    currentSessionId: "",
    typingTimer: 0,
    refreshTimer: 0,
    /** The running turn of the open chat (from /api/events): its session, and how many bot messages the chat had when it started. */
    turn: null,
  };

  // ---- small helpers -------------------------------------------------------

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (v === undefined || v === null) continue;
      if (k === "text") node.textContent = String(v);
      else if (k === "class") node.className = v;
      else if (k.startsWith("data-") || k.startsWith("aria-") || k === "title" || k === "type" || k === "scope") node.setAttribute(k, String(v));
      else node[k] = v;
    }
    for (const c of children) if (c) node.append(c);
    return node;
  }

  async function api(path, init) {
    const res = await fetch(path, init);
    // The login cookie expired or the token changed: sign in again.
    if (res.status === 401) location.assign(`/login?next=${encodeURIComponent(location.pathname)}`);
    let body = null;
    try {
      body = await res.json();
    } catch {
      body = null;
    }
    if (!res.ok) throw new Error((body && body.error) || `${res.status} ${res.statusText}`);
    return body;
  }

  /** A user id the console accepts (see adapters/console/ids.ts): letters, digits, '_', '.', '-'. */
  function idFromName(name) {
    const s = name
      .normalize("NFKD")
      .replace(/[\u0300-\u036f]/g, "")
      .toLowerCase()
      .replace(/[^a-z0-9_.-]+/g, "-")
      .replace(/^[^a-z0-9]+/, "")
      .replace(/-+$/, "")
      .slice(0, 64);
    if (s) return s;
    // Names with no Latin letters still need a stable id of their own.
    let h = 0;
    for (const ch of name) h = (Math.imul(h, 31) + ch.codePointAt(0)) >>> 0;
    return `u${h.toString(36)}`;
  }

  function newClientId() {
    if (crypto.randomUUID) return crypto.randomUUID();
    // randomUUID needs a secure context; the console may be opened over plain http on a LAN name.
    return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
  }

  // ---- Markdown ------------------------------------------------------------

  const escapeHtml = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

  const markdown = (() => {
    if (!window.marked || !window.DOMPurify) return null;
    const m = new window.marked.Marked({ gfm: true, breaks: true, async: false });
    // Raw HTML in an answer is shown as the text it is, never as markup.
    m.use({ renderer: { html: (token) => escapeHtml(token.text ?? token.raw ?? "") } });
    return m;
  })();

  const SANITIZE = {
    RETURN_DOM_FRAGMENT: true,
    // Images from a model could carry the conversation off in their URLs; forms and styles have no place in an answer.
    FORBID_TAGS: ["img", "style", "form", "input", "button", "textarea", "select", "iframe", "svg", "math"],
    FORBID_ATTR: ["style"],
  };

  /** A bot message's text as rendered Markdown (or plain text if the renderer did not load). */
  function renderBotText(node, text) {
    if (!markdown) {
      node.textContent = text;
      return;
    }
    const fragment = window.DOMPurify.sanitize(markdown.parse(text).trim(), SANITIZE);
    for (const a of fragment.querySelectorAll("a[href]")) {
      a.setAttribute("rel", "noopener noreferrer");
      a.setAttribute("target", "_blank");
    }
    node.replaceChildren(fragment);
    node.dataset.format = "markdown";
  }

  // ---- participants look distinct ------------------------------------------

  const HUES = 8;
  function hueOf(name) {
    let h = 0;
    for (const ch of name) h = (Math.imul(h, 31) + ch.codePointAt(0)) >>> 0;
    return h % HUES;
  }
  const initialOf = (name) => (Array.from(name.trim())[0] || "?").toUpperCase();

  const time = (iso) => {
    const d = iso ? new Date(iso) : new Date();
    return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  };

  function setStatus(text, kind) {
    const s = $("send-status");
    s.textContent = text;
    s.dataset.kind = kind || "info";
  }

  // ---- the open chat -------------------------------------------------------

  function chatDescription() {
    if (state.mode === "private") {
      const name = $("user-name").value.trim() || "Alice";
      return { type: "private", id: idFromName(name), name, title: `Private chat with ${name}` };
    }
    const name = $("group-name").value.trim() || "Team";
    return { type: "group", id: idFromName(name), name, title: `Group ${name}` };
  }

  function sameChat(e) {
    const a = state.address;
    return !!a && e.chatId === a.chatId && (e.threadId || "") === (a.threadId || "");
  }

  function openChat() {
    const seq = ++state.addressSeq;
    const chat = chatDescription();
    $("chat-title").textContent = chat.title;
    // Busy until the chat's history is on the page (assistive technology waits; so can a test).
    $("messages").setAttribute("aria-busy", "true");
    state.address = null;
    state.addressReady = (async () => {
      try {
        const address = await api(`/api/console/address?type=${chat.type}&id=${encodeURIComponent(chat.id)}`);
        if (seq !== state.addressSeq) return;
        state.address = address;
        $("chat-channel").textContent = address.channel;
        $("bot-handle").textContent = `@${address.botUsername}`;
        const [history, earlier] = await Promise.all([api(`/api/console/history?chatId=${encodeURIComponent(address.chatId)}`), transcriptOf(address.channel)]);
        if (seq !== state.addressSeq) return;
        $("messages").replaceChildren();
        for (const m of shownHistory(earlier, history.messages)) addMessage(m);
        $("messages").setAttribute("aria-busy", "false");
        setTyping(false);
        await updateCurrentSession();
      } catch (err) {
        if (seq !== state.addressSeq) return;
        $("messages").setAttribute("aria-busy", "false");
        setStatus(`Could not open the chat: ${err.message}`, "error");
      }
    })();
    return state.addressReady;
  }

  /**
   * What the page shows of a chat: the transcript's entries from before this
   * process's own history of it begins, then that history (which adds what
   * the transcript does not keep: notices, cards). The database holds the
   * conversation across restarts; earlier exchanges, with who said them,
   * come from the transcript.
   *
   * A message the bot sends on its own (an API send, a scheduled job, a
   * reply recovered after a restart) is written to the transcript before it
   * is delivered, so its row can come before the history's first entry
   * while the history holds it too: each bot message of the history takes
   * out the latest transcript answer of the same text written before it,
   * and is shown once.
   */
  function shownHistory(earlier, live) {
    const since = live.length ? Date.parse(live[0].at) : Infinity;
    const taken = new Set();
    for (const m of live) {
      if (m.from !== "bot") continue;
      // Trimmed: a reply is sent as the chunker cut it, the transcript keeps what the turn wrote.
      const text = withoutStoppedMark(m.text).text.trim();
      for (let i = earlier.length - 1; i >= 0; i--) {
        const e = earlier[i];
        if (e.role !== "assistant" || taken.has(i) || Date.parse(e.at) > Date.parse(m.at) || e.text.trim() !== text) continue;
        taken.add(i);
        break;
      }
    }
    return [...earlier.filter((e, i) => !taken.has(i) && Date.parse(e.at) < since), ...live];
  }

  /**
   * The current session's transcript of a chat, from the database (GET
   * /api/bindings, then /api/sessions/:id), as page messages. Empty for a
   * chat that never talked.
   */
  async function transcriptOf(channel) {
    const { bindings } = await api(`/api/bindings?channel=${encodeURIComponent(channel)}`);
    if (!bindings[0]) return [];
    const r = await api(`/api/sessions/${encodeURIComponent(bindings[0].sessionId)}`);
    const privateName = state.mode === "private" ? chatDescription().name : "";
    return (
      r.messages
        // Tool rounds show as the bot's: what it called, the decision, and the (cut) result.
        .filter((m) => m.role === "user" || m.role === "assistant" || m.role === "tool")
        .map((m) => ({
          messageId: `${r.session.id}:${m.seq}`,
          from: m.role === "user" ? "user" : "bot",
          role: m.role,
          text: m.content,
          // An answer cut by /stop: the transcript keeps what the chat was shown, marked.
          stopped: m.stopped === true,
          // The transcript records who spoke (entries from before it did show as "earlier message").
          senderName: m.role === "user" ? m.speaker || privateName || "earlier message" : undefined,
          at: m.createdAt,
          source: "transcript",
        }))
    );
  }

  /**
   * The gateway finishes the draft of an answer cut short with this line
   * (STOPPED_MARK in src/gateway/outbound/drafts.ts): the page shows it as
   * the message's "(stopped)" mark, as it shows a transcript answer marked stopped.
   */
  const STOPPED_MARK = "\n\n(stopped)";
  function withoutStoppedMark(text) {
    return text.endsWith(STOPPED_MARK) ? { text: text.slice(0, -STOPPED_MARK.length), stopped: true } : { text, stopped: false };
  }

  function setText(li, m) {
    const node = li.querySelector(".text");
    if (m.from === "bot") {
      const { text, stopped } = withoutStoppedMark(m.text);
      renderBotText(node, text);
      if (stopped || m.stopped) markLiStopped(li);
    } else node.textContent = m.text;
    if (m.from === "bot" && m.card) renderCard(li, m.card);
  }

  function markLiStopped(li) {
    if (li.dataset.stopped === "true") return;
    li.dataset.stopped = "true";
    li.querySelector(".meta").append(el("span", { class: "stopped", text: "(stopped)" }));
  }

  /** An approval card's buttons; a press is decided as the current speaker, and the answer shown only here. */
  function renderCard(li, card) {
    li.querySelector(".card-actions")?.remove();
    if (!card.actions.length) return;
    const row = el("div", { class: "card-actions" });
    for (const a of card.actions) {
      const b = el("button", { type: "button", class: "card-button", text: a.label, "data-action": a.action });
      b.addEventListener("click", async () => {
        if (!state.address) return setStatus("The chat is not open yet.", "error");
        const name = state.mode === "private" ? chatDescription().name : state.speaker;
        try {
          const r = await api("/api/console/approvals", {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ approvalId: card.id, action: a.action, chatId: state.address.chatId, sender: { id: idFromName(name), name } }),
          });
          setStatus(r.text, r.ok ? "ok" : "error");
        } catch (err) {
          setStatus(String(err.message || err), "error");
        }
      });
      row.append(b);
    }
    li.append(row);
  }

  /** A notice's severity as its classes (`notice notice-error`, -warn, -success); replies and info notices have none. */
  const SEVERITIES = ["error", "warn", "success"];
  const noticeClass = (m) => (m.from === "bot" && SEVERITIES.includes(m.severity) ? ` notice notice-${m.severity}` : "");

  function addMessage(m) {
    const list = $("messages");
    const existing = m.messageId ? findMessage(m.messageId) : null;
    if (existing) {
      setText(existing, m);
      return existing;
    }
    const who = m.from === "bot" ? "switchboard" : m.senderName || "you";
    const li = el(
      "li",
      { class: `msg ${m.from}${noticeClass(m)}`, "data-from": m.from, "data-message-id": m.messageId || "", "data-source": m.source || "live" },
      el(
        "div",
        { class: "meta" },
        el("span", { class: "avatar", text: m.from === "bot" ? "S" : initialOf(who), "aria-hidden": "true" }),
        el("span", { class: "who", text: who }),
        el("time", { text: time(m.at) }),
      ),
      el("div", { class: "text" }),
    );
    if (m.from === "user") li.dataset.hue = String(hueOf(who));
    setText(li, m);
    list.append(li);
    li.scrollIntoView({ block: "end" });
    return li;
  }

  /** Marks the answer of a stopped turn; a turn stopped before it wrote anything gets a line of its own. */
  function markStopped(turn) {
    const bots = [...$("messages").children].filter((li) => li.dataset.from === "bot").slice(turn.botsBefore);
    const answer = bots.find((li) => !/^(Stopped\.|Nothing to stop\.)/.test(li.querySelector(".text").textContent.trim()));
    markLiStopped(answer || addMessage({ messageId: "", from: "bot", text: "", at: new Date().toISOString() }));
  }

  function findMessage(messageId) {
    for (const li of $("messages").children) if (li.dataset.messageId === messageId) return li;
    return null;
  }

  function setTyping(on) {
    clearTimeout(state.typingTimer);
    $("typing").hidden = !on;
    // Typing is refreshed every few seconds while a turn runs; without a refresh it lapses.
    if (on) state.typingTimer = setTimeout(() => ($("typing").hidden = true), 6000);
  }

  async function updateCurrentSession() {
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

  async function send(text) {
    await state.addressReady;
    const address = state.address;
    if (!address) return setStatus("The chat is not open yet; check the names above.", "error");
    const chat = chatDescription();
    const senderName = state.mode === "private" ? chat.name : state.speaker;
    const body = {
      chat: state.mode === "private" ? { type: "private", id: chat.id } : { type: "group", id: chat.id, title: chat.name },
      sender: { id: idFromName(senderName), name: senderName },
      text,
      clientId: newClientId(),
    };
    if (state.mode === "group") body.mention = $("mention").checked;
    const li = addMessage({ messageId: body.clientId, from: "user", text, senderName, at: new Date().toISOString() });
    li.dataset.status = "sending";
    try {
      const r = await api("/api/console/messages", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      li.dataset.status = r.status;
      if (r.status === "accepted") setStatus(state.mode === "group" && !body.mention ? "Sent (not addressed to the bot: kept as context)." : "Sent.", "info");
      else setStatus(`Not handled: ${r.status}${r.reason ? ` (${r.reason})` : ""}.`, "warn");
      return true;
    } catch (err) {
      li.dataset.status = "failed";
      setStatus(`Could not send: ${err.message}`, "error");
      return false;
    }
  }

  // ---- participants --------------------------------------------------------

  function renderParticipants() {
    const ul = $("participants");
    ul.replaceChildren();
    for (const name of state.participants) {
      const id = `speaker-${idFromName(name)}`;
      const radio = el("input", { type: "radio", name: "speaker", id, value: name, checked: name === state.speaker });
      radio.addEventListener("change", () => (state.speaker = name));
      const remove = el("button", { type: "button", class: "link", text: "remove", "aria-label": `Remove ${name}` });
      remove.disabled = state.participants.length <= 1;
      remove.addEventListener("click", () => {
        state.participants = state.participants.filter((p) => p !== name);
        if (state.speaker === name) state.speaker = state.participants[0];
        renderParticipants();
      });
      ul.append(el("li", {}, radio, el("label", { htmlFor: id, text: name }), remove));
    }
  }

  function addParticipant() {
    const input = $("new-participant");
    const name = input.value.trim();
    if (!name) return;
    if (!state.participants.some((p) => idFromName(p) === idFromName(name))) state.participants.push(name);
    state.speaker = state.participants.find((p) => idFromName(p) === idFromName(name));
    input.value = "";
    renderParticipants();
  }

  // ---- operator pane -------------------------------------------------------

  function cell(text, cls) {
    return el("td", { class: cls, text });
  }

  async function loadSessions() {
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

  async function refresh() {
    const jobs = [loadSessions(), loadBindings(), updateCurrentSession()];
    if (state.selectedSession) jobs.push(loadTranscript(state.selectedSession));
    const results = await Promise.allSettled(jobs);
    const failed = results.find((r) => r.status === "rejected");
    if (failed) setStatus(`Operator data could not be loaded: ${failed.reason.message}`, "error");
  }

  /** Events come in bursts (a turn emits several): one refresh per burst is enough. */
  function scheduleRefresh() {
    clearTimeout(state.refreshTimer);
    state.refreshTimer = setTimeout(refresh, 150);
  }

  function logEvent(e) {
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

  // ---- live streams --------------------------------------------------------

  function stream(url, indicator, onEvent) {
    const show = (s) => {
      const node = $(indicator);
      node.dataset.state = s;
      node.textContent = s;
    };
    const es = new EventSource(url);
    es.onopen = () => show("open");
    es.onerror = () => show(es.readyState === EventSource.CLOSED ? "closed" : "reconnecting");
    es.onmessage = (m) => {
      let e;
      try {
        e = JSON.parse(m.data);
      } catch {
        return;
      }
      onEvent(e);
    };
    return es;
  }

  function onConsoleEvent(e) {
    if (!sameChat(e)) return;
    if (e.type === "typing") return setTyping(true);
    setTyping(false);
    if (e.type === "message" || e.type === "edit")
      addMessage({ messageId: e.messageId, from: "bot", text: e.text, at: e.at, card: e.card, severity: e.severity });
    if (e.type === "message") scheduleRefresh();
  }

  function sameChatTurn(e) {
    const to = e.replyTo;
    return !!to && to.platform === "console" && sameChat(to);
  }

  function onOperatorEvent(e) {
    if (e.kind === "lifecycle" && e.phase === "turn-start" && sameChatTurn(e)) {
      state.turn = { sessionId: e.sessionId, botsBefore: [...$("messages").children].filter((li) => li.dataset.from === "bot").length };
    }
    if (e.kind === "turn-complete" && sameChatTurn(e)) state.turn = null;
    // /stop fences the running turn (it completes no turn): the session's "stopped" event says so.
    if (e.kind === "lifecycle" && e.phase === "stopped" && state.turn && e.sessionId === state.turn.sessionId) {
      markStopped(state.turn);
      state.turn = null;
    }
    if (e.kind === "lifecycle" && ["rotated", "switched", "stopped"].includes(e.phase)) logEvent(e);
    if (e.kind === "turn-complete" || (e.kind === "lifecycle" && e.phase !== "turn-start")) scheduleRefresh();
  }

  // ---- wiring --------------------------------------------------------------

  function setMode(mode) {
    state.mode = mode;
    $("private-setup").hidden = mode !== "private";
    $("group-setup").hidden = mode !== "group";
    openChat();
  }

  $("mode-private").addEventListener("change", () => setMode("private"));
  $("mode-group").addEventListener("change", () => setMode("group"));
  $("user-name").addEventListener("change", openChat);
  $("group-name").addEventListener("change", openChat);
  $("add-participant").addEventListener("click", addParticipant);
  $("new-participant").addEventListener("keydown", (e) => {
    if (e.key === "Enter") {
      e.preventDefault();
      addParticipant();
    }
  });
  $("show-archived").addEventListener("change", () => loadSessions().catch((err) => setStatus(err.message, "error")));
  $("refresh").addEventListener("click", refresh);

  const input = $("message-input");
  $("composer").addEventListener("submit", async (e) => {
    e.preventDefault();
    const text = input.value;
    if (!text.trim()) return;
    input.value = "";
    if (!(await send(text))) input.value = text;
    input.focus();
  });
  $("stop").addEventListener("click", async () => {
    $("stop").disabled = true;
    try {
      await send("/stop");
    } finally {
      $("stop").disabled = false;
    }
  });
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $("composer").requestSubmit();
    }
  });

  renderParticipants();
  stream("/api/console/events", "console-stream", onConsoleEvent);
  stream("/api/events", "ops-stream", onOperatorEvent);
  setMode("private");
  refresh();
})();
