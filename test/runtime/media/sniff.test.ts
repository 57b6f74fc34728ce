/**
 * The attachment sniffer reads a file's type from its first bytes, and loads
 * magic-bytes.js (which builds its whole signature tree when evaluated) only
 * for the first attachment, so a start does not pay for it.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { sniffAudio, sniffImage } from "../../../src/runtime/media/sniff.js";

const PNG = Buffer.from("89504e470d0a1a0a0000000d49484452", "hex");
const OGG = Buffer.concat([Buffer.from("OggS"), Buffer.alloc(60)]);

describe("sniff", () => {
  it("names an image or audio type from the bytes, and nothing for text that claims to be one", async () => {
    expect(await sniffImage(PNG)).toBe("image/png");
    expect(await sniffAudio(OGG)).toEqual({ mimeType: "audio/ogg", ext: "ogg" });
    expect(await sniffImage(Buffer.from("not an image at all"))).toBeUndefined();
    expect(await sniffAudio(Buffer.from("<html>"))).toBeUndefined();
  });

  it("loads magic-bytes.js on the first sniff, not when the module is imported", async () => {
    // A fresh process: this one's module cache may hold it from another test.
    const script = [
      'const { createRequire } = await import("node:module");',
      "const cache = createRequire(import.meta.url).cache;",
      'const loaded = () => Object.keys(cache).some((k) => k.includes("magic-bytes.js"));',
      'const { sniffImage } = await import("./src/runtime/media/sniff.ts");',
      "const before = loaded();",
      `const type = await sniffImage(Buffer.from("${PNG.toString("hex")}", "hex"));`,
      "console.log(JSON.stringify({ before, type, after: loaded() }));",
    ].join("\n");
    const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: process.cwd() });
    expect(JSON.parse(stdout)).toEqual({ before: false, type: "image/png", after: true });
  });
});
