import type { Runner } from "../runtime/runner.js";
import type { Registry } from "../session/registry.js";
import type { SessionStore } from "../store/sessions.js";
import type { TranscriptStore } from "../store/transcript.js";
import type { HttpHandler } from "./adapter.js";

export interface ConsoleApiDeps {
  registry: Registry;
  sessions: SessionStore;
  transcript: TranscriptStore;
  runner: Runner;
}

/** The operator API behind the web console: sessions, bindings, transcripts, live lifecycle events. */
export function mountConsoleApi(route: (method: "GET" | "POST", path: string, handler: HttpHandler) => void, deps: ConsoleApiDeps): void {
  void route;
  void deps;
}
