// Building the page's nodes. Text goes in with textContent, never parsed as HTML: chat text is untrusted.

export const $ = (id) => document.getElementById(id);

export function el(tag, props, ...children) {
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

export const time = (iso) => {
  const d = iso ? new Date(iso) : new Date();
  return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
};

export function setStatus(text, kind) {
  const s = $("send-status");
  s.textContent = text;
  s.dataset.kind = kind || "info";
}
