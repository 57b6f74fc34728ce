// The open chat's messages on the page: the bot's (rendered Markdown, notices by severity, approval
// cards, the "(stopped)" mark) and the user's (a colour per speaker, the send status).
import { $, el, setStatus, time } from "./dom.js";
import { api } from "./api.js";
import { hueOf, idFromName } from "./names.js";
import { renderBotText } from "./markdown.js";
import { speakerName, state } from "./state.js";

/**
 * The gateway finishes the draft of an answer cut short with this line
 * (STOPPED_MARK in src/gateway/outbound/drafts.ts): the page shows it as
 * the message's "(stopped)" mark, as it shows a transcript answer marked stopped.
 */
const STOPPED_MARK = "\n\n(stopped)";
export function withoutStoppedMark(text) {
  return text.endsWith(STOPPED_MARK) ? { text: text.slice(0, -STOPPED_MARK.length), stopped: true } : { text, stopped: false };
}

const initialOf = (name) => (Array.from(name.trim())[0] || "?").toUpperCase();

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
      const name = speakerName();
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

export function addMessage(m) {
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

/** The chat's messages from the bot, in order (a running turn's answer comes after those it had when it started). */
export const botMessages = () => [...$("messages").children].filter((li) => li.dataset.from === "bot");

/** Marks the answer of a stopped turn; a turn stopped before it wrote anything gets a line of its own. */
export function markStopped(turn) {
  const bots = botMessages().slice(turn.botsBefore);
  const answer = bots.find((li) => !/^(Stopped\.|Nothing to stop\.)/.test(li.querySelector(".text").textContent.trim()));
  markLiStopped(answer || addMessage({ messageId: "", from: "bot", text: "", at: new Date().toISOString() }));
}

function findMessage(messageId) {
  for (const li of $("messages").children) if (li.dataset.messageId === messageId) return li;
  return null;
}

export function setTyping(on) {
  clearTimeout(state.typingTimer);
  $("typing").hidden = !on;
  // Typing is refreshed every few seconds while a turn runs; without a refresh it lapses.
  if (on) state.typingTimer = setTimeout(() => ($("typing").hidden = true), 6000);
}
