import fs from "node:fs";
import { chromium, type Browser } from "playwright-core";

/**
 * Chromium for the console's end-to-end tests, driven by playwright-core.
 * In order: CHROMIUM_PATH when set (it must exist), Debian's /usr/bin/chromium
 * when installed, else the build @sparticuz/chromium ships on npm (a dev
 * dependency, so `npm install` on a machine with only Node is enough). That
 * build is brotli-packed; the first launch unpacks it to the temporary folder
 * (about 5 s; test/support/browser-setup.ts does it once, before the
 * workers start), later ones reuse the unpacked binary.
 */
const SYSTEM = "/usr/bin/chromium";

// The machine has no network: these keep Chromium from trying to reach Google at start.
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export async function chromiumExecutable(): Promise<string> {
  const named = process.env.CHROMIUM_PATH;
  if (named) {
    // A named browser that is missing is a broken environment, not a reason to fall back silently.
    if (!fs.existsSync(named))
      throw new Error(`CHROMIUM_PATH=${named} does not exist: point it at a Chromium binary, or unset it to use /usr/bin/chromium or @sparticuz/chromium`);
    return named;
  }
  if (fs.existsSync(SYSTEM)) return SYSTEM;
  let bundled: typeof import("@sparticuz/chromium").default;
  try {
    bundled = (await import("@sparticuz/chromium")).default;
  } catch (e) {
    throw new Error(
      `no Chromium: ${SYSTEM} is missing and @sparticuz/chromium (a devDependency) cannot be loaded (${(e as Error).message}); run \`npm install\`, or set CHROMIUM_PATH`,
    );
  }
  return bundled.executablePath();
}

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: await chromiumExecutable(), args: ARGS, timeout: 60_000 });
}
