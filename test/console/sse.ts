/** A server-sent events reader over fetch, for tests: collects every `data:` event and waits for one that matches. */
export interface SseReader<T> {
  readonly events: T[];
  /** Resolves with the first event (already received or still to come) that matches; rejects after timeoutMs. */
  next(match: (e: T) => boolean, timeoutMs?: number, what?: string): Promise<T>;
  close(): void;
}

export async function openSse<T = unknown>(url: string): Promise<SseReader<T>> {
  const abort = new AbortController();
  const res = await fetch(url, { signal: abort.signal, headers: { accept: "text/event-stream" } });
  if (!res.ok || !res.body) throw new Error(`SSE ${url} answered ${res.status}`);
  const events: T[] = [];
  const waiters = new Set<{ match: (e: T) => boolean; resolve: (e: T) => void }>();
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  void (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += value;
        let cut: number;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          const frame = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const data = frame
            .split("\n")
            .filter((l) => l.startsWith("data:"))
            .map((l) => l.slice(5).trimStart())
            .join("\n");
          if (!data) continue;
          const e = JSON.parse(data) as T;
          events.push(e);
          for (const w of waiters) if (w.match(e)) w.resolve(e);
        }
      }
    } catch {
      // Aborted by close(), or the server went away: the waiters time out.
    }
  })();
  return {
    events,
    next(match, timeoutMs = 10_000, what = "a matching event") {
      const seen = events.find(match);
      if (seen) return Promise.resolve(seen);
      return new Promise<T>((resolve, reject) => {
        const w = {
          match,
          resolve: (e: T) => {
            clearTimeout(timer);
            waiters.delete(w);
            resolve(e);
          },
        };
        const timer = setTimeout(() => {
          waiters.delete(w);
          reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what} on ${url}; got ${JSON.stringify(events)}`));
        }, timeoutMs);
        waiters.add(w);
      });
    },
    close: () => abort.abort(),
  };
}
