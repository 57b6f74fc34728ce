// The page's two live streams (server-sent events): the console's replies to its chats, and the
// operator events (turns starting, completing, stopped; sessions rotated and switched).
import { $ } from "./dom.js";
import { addMessage, botMessages, markStopped, setTyping } from "./messages.js";
import { logEvent, scheduleRefresh } from "./operator.js";
import { sameChat, state } from "./state.js";

export function stream(url, indicator, onEvent) {
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

export function onConsoleEvent(e) {
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

export function onOperatorEvent(e) {
  if (e.kind === "lifecycle" && e.phase === "turn-start" && sameChatTurn(e)) {
    state.turn = { sessionId: e.sessionId, botsBefore: botMessages().length };
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
