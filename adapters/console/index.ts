/**
 * The web console adapter: a local, trusted channel for operators, served on
 * the gateway's own HTTP server (the page at `/`, its API under /api/console).
 */
export { ConsoleAdapter, type ConsoleAdapterOptions, type ConsoleEvent, type ConsoleMessage, type HistoryEntry } from "./adapter.js";
export * as consoleIds from "./ids.js";
