// The ids the page makes up: a speaker's user id and colour from their name, and a fresh client id for each message.

/** A stable number for a name: the fallback id of a name with no Latin letters, and a speaker's colour. */
function hashOf(name) {
  let h = 0;
  for (const ch of name) h = (Math.imul(h, 31) + ch.codePointAt(0)) >>> 0;
  return h;
}

/** A user id the console accepts (see adapters/console/ids.ts): letters, digits, '_', '.', '-'. */
export function idFromName(name) {
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
  return `u${hashOf(name).toString(36)}`;
}

/** One of the page's speaker colours (`data-hue`, chat.css), the same for a name every time. */
const HUES = 8;
export const hueOf = (name) => hashOf(name) % HUES;

export function newClientId() {
  if (crypto.randomUUID) return crypto.randomUUID();
  // randomUUID needs a secure context; the console may be opened over plain http on a LAN name.
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
}
