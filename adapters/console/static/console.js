// The Switchboard console page: browser ES modules, no build step. This one wires the page's
// controls and starts it; the others each hold one part (dom, markdown, state, messages, chat,
// participants, operator, streams; api and names beneath them).
// Every piece of text from a chat or the API is put in the page with
// textContent, never parsed as HTML: chat text is untrusted. The one
// exception is the bot's answers, which are Markdown (markdown.js): nothing
// the model writes can run (the page's CSP forbids inline script as well).
import { $, setStatus } from "./dom.js";
import { openChat, send } from "./chat.js";
import { loadSessions, refresh } from "./operator.js";
import { addParticipant, renderParticipants } from "./participants.js";
import { state } from "./state.js";
import { onConsoleEvent, onOperatorEvent, stream } from "./streams.js";

function setMode(mode) {
  state.mode = mode;
  $("private-setup").hidden = mode !== "private";
  $("group-setup").hidden = mode !== "group";
  openChat();
}

function wireSetup() {
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
}

function wireComposer() {
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
}

wireSetup();
wireComposer();
renderParticipants();
stream("/api/console/events", "console-stream", onConsoleEvent);
stream("/api/events", "ops-stream", onOperatorEvent);
setMode("private");
refresh();
