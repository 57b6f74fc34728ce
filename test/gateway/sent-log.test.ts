import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { SentLog } from "../../src/gateway/outbound/sent-log.js";

const tmp = () => path.join(fs.mkdtempSync(path.join(os.tmpdir(), "sentlog-")), "x.db.sent.log");

describe("SentLog", () => {
  it("remembers accepted chunks across a reopen (a killed process) until their reply is done", () => {
    const file = tmp();
    const a = SentLog.open(file);
    a.record("d1", 0, "m1");
    a.record("d1", 1, "m2");
    a.record("d2", 0, "m3");
    a.done("d2");
    // no close(): the process was killed
    const b = SentLog.open(file);
    expect(b.sent("d1", 0)).toBe("m1");
    expect(b.sent("d1", 1)).toBe("m2");
    expect(b.sent("d1", 2)).toBeUndefined();
    expect(b.sent("d2", 0)).toBeUndefined();
    b.done("d1");
    b.close();
    expect(SentLog.read(file).size).toBe(0);
  });

  it("compacts to the open chunks only, so the file stays small", () => {
    const file = tmp();
    const log = SentLog.open(file, 100);
    for (let i = 0; i < 1000; i++) {
      log.record(`d${i}`, 0, `m${i}`);
      if (i !== 500) log.done(`d${i}`);
    }
    expect(fs.statSync(file).size).toBeLessThan(10_000);
    expect(SentLog.read(file)).toEqual(new Map([["d500:0", "m500"]]));
    log.close();
  });
  it("a log that exists but cannot be read stops the open with the file and the fix, never reads as empty", () => {
    const file = tmp();
    fs.mkdirSync(file); // EISDIR: unreadable as a file
    expect(() => SentLog.open(file)).toThrow(/sent log .* could not be read \(EISDIR\).*sent twice/);
    // A missing log is a first start: empty.
    expect(SentLog.read(tmp()).size).toBe(0);
  });
});
