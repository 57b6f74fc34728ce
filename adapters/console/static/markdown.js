// The bot's answers are Markdown: marked renders them with raw HTML escaped (a model's <img onerror>
// shows as text), and DOMPurify sanitizes the result into DOM nodes, so nothing the model writes can
// run (the page's CSP forbids inline script as well). Both load as classic scripts before the modules.

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
export function renderBotText(node, text) {
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
