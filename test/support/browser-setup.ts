import { chromiumExecutable } from "./chromium.js";

/**
 * Unpacks @sparticuz/chromium's browser once, before the browser project's
 * workers start. Left to the first launch in each worker, two workers raced:
 * one spawned /tmp/chromium while the other was still writing it (spawn
 * ETXTBSY on a fresh machine).
 */
export async function setup(): Promise<void> {
  await chromiumExecutable();
}
