import { afterEach, describe, expect, it } from "vitest";
import { chromiumExecutable } from "../support/chromium.js";

const saved = process.env.CHROMIUM_PATH;
afterEach(() => {
  if (saved === undefined) delete process.env.CHROMIUM_PATH;
  else process.env.CHROMIUM_PATH = saved;
});

describe("the console tests' Chromium", () => {
  it("a CHROMIUM_PATH that does not exist is an error naming it, never a silent fallback", async () => {
    process.env.CHROMIUM_PATH = "/nonexistent/chromium";
    await expect(chromiumExecutable()).rejects.toThrow(/CHROMIUM_PATH=\/nonexistent\/chromium does not exist/);
  });

  it("CHROMIUM_PATH, when it exists, is used as given", async () => {
    process.env.CHROMIUM_PATH = process.execPath; // any existing file: the choice is what is tested, not the launch
    expect(await chromiumExecutable()).toBe(process.execPath);
  });
});
