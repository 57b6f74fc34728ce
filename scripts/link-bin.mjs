// Links node_modules/.bin/switchboard to bin/switchboard.mjs: `npx switchboard` runs a
// node_modules/.bin entry straight away. The project's package.json has no "bin" for it on
// purpose: with one, npm 11 installs the project into its npx cache first (a link, and the
// build again as its `prepare`: 20 s on a first call, and ENOENT in the Docker image, which has
// no scripts/), and loads the whole dependency tree on every later call (2 s). scripts/build.mjs
// runs this on every install (`npm install`, and `npm ci --omit=dev` in the image's deps stage);
// `node scripts/link-bin.mjs` runs it alone.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export function linkBin(root) {
  const binDir = path.join(root, "node_modules", ".bin");
  const target = path.join("..", "..", "bin", "switchboard.mjs");
  fs.mkdirSync(binDir, { recursive: true });
  if (process.platform === "win32") {
    // npm's own shims on Windows are .cmd files; a symlink would need privileges.
    fs.writeFileSync(path.join(binDir, "switchboard.cmd"), `@node "%~dp0\\${target}" %*\r\n`);
    return;
  }
  const link = path.join(binDir, "switchboard");
  const current = fs.lstatSync(link, { throwIfNoEntry: false })?.isSymbolicLink() ? fs.readlinkSync(link) : undefined;
  if (current === target) return;
  fs.rmSync(link, { force: true });
  fs.symlinkSync(target, link);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  linkBin(path.resolve(path.dirname(fileURLToPath(import.meta.url)), ".."));
}
