// A group's participants: who the page can speak as, and which one it speaks as now.
import { $, el } from "./dom.js";
import { idFromName } from "./names.js";
import { state } from "./state.js";

export function renderParticipants() {
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

export function addParticipant() {
  const input = $("new-participant");
  const name = input.value.trim();
  if (!name) return;
  if (!state.participants.some((p) => idFromName(p) === idFromName(name))) state.participants.push(name);
  state.speaker = state.participants.find((p) => idFromName(p) === idFromName(name));
  input.value = "";
  renderParticipants();
}
