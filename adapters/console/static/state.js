// What the page knows: the open chat (as the form describes it and as the gateway addresses it),
// who speaks, and the operator pane's selection.
import { $ } from "./dom.js";
import { idFromName } from "./names.js";

export const state = {
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

export function chatDescription() {
  if (state.mode === "private") {
    const name = $("user-name").value.trim() || "Alice";
    return { type: "private", id: idFromName(name), name, title: `Private chat with ${name}` };
  }
  const name = $("group-name").value.trim() || "Team";
  return { type: "group", id: idFromName(name), name, title: `Group ${name}` };
}

/** Who the page speaks as: the private chat's user, or the group's chosen speaker. */
export const speakerName = () => (state.mode === "private" ? chatDescription().name : state.speaker);

export function sameChat(e) {
  const a = state.address;
  return !!a && e.chatId === a.chatId && (e.threadId || "") === (a.threadId || "");
}
