/** One progress line on stderr, rewritten in place on a TTY, throttled otherwise. */
let last = 0;
let lastText = "";
export function progress(text: string, force = false): void {
  const now = Date.now();
  if (!force && now - last < (process.stderr.isTTY ? 200 : 2000)) return;
  if (text === lastText && !force) return;
  last = now;
  lastText = text;
  if (process.stderr.isTTY) process.stderr.write(`\r\x1b[K${text}`);
  else process.stderr.write(`${text}\n`);
}
export function progressDone(): void {
  if (process.stderr.isTTY && lastText) process.stderr.write("\n");
  lastText = "";
}
