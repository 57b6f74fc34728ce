// Opening a chat (its address, then what it said before: this process's history and the transcript)
// and sending into it.
import { $, setStatus } from "./dom.js";
import { api } from "./api.js";
import { idFromName, newClientId } from "./names.js";
import { addMessage, setTyping, withoutStoppedMark } from "./messages.js";
import { updateCurrentSession } from "./operator.js";
import { chatDescription, speakerName, state } from "./state.js";

export function openChat() {
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

export async function send(text) {
  await state.addressReady;
  const address = state.address;
  if (!address) return setStatus("The chat is not open yet; check the names above.", "error");
  const chat = chatDescription();
  const senderName = speakerName();
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
