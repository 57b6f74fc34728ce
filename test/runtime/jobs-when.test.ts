import { describe, expect, it } from "vitest";
import { checkTiming, nextAfter, parseDuration, parseWhen, zonedTime } from "../../src/runtime/jobs/when.js";

const now = new Date("2027-03-27T16:00:00Z"); // 17:00 in Paris (CET), the day before the spring change

describe("reading /remind's <when>", () => {
  it("reads every documented form in the chat's zone", () => {
    const at = (input: string) => {
      const r = parseWhen(input, "Europe/Paris", now);
      if ("error" in r) throw new Error(r.error);
      return [r.timing.kind, r.timing.kind === "once" ? r.timing.spec : r.timing.spec, r.rest];
    };
    expect(at("in 10m stretch")).toEqual(["once", "2027-03-27T16:10:00.000Z", "stretch"]);
    expect(at("in 1h30m tea time")).toEqual(["once", "2027-03-27T17:30:00.000Z", "tea time"]);
    expect(at("at 18:00 dinner")).toEqual(["once", "2027-03-27T17:00:00.000Z", "dinner"]);
    // 9:00 tomorrow is after the change: CEST, UTC+2.
    expect(at("tomorrow 9:00 coffee")).toEqual(["once", "2027-03-28T07:00:00.000Z", "coffee"]);
    expect(at("at 8:00 early")).toEqual(["once", "2027-03-28T06:00:00.000Z", "early"]); // passed today: tomorrow
    expect(at("2027-04-01T09:00 april")).toEqual(["once", "2027-04-01T07:00:00.000Z", "april"]);
    expect(at("2027-04-01T09:00Z utc")).toEqual(["once", "2027-04-01T09:00:00.000Z", "utc"]);
    expect(at("every 1d daily")).toEqual(["every", "86400000", "daily"]);
    expect(at("cron 0 9 * * 1-5 standup")).toEqual(["cron", "0 9 * * 1-5", "standup"]);
  });

  it("answers odd input with the forms, never a crash", () => {
    for (const input of [
      "",
      "in",
      "in 0m x",
      "in 10 x",
      "in 99999999999d x",
      "at 24:00 x",
      "at 9:60 x",
      "tomorrow x",
      "every 10s x",
      "cron * * x",
      "cron 61 * * * * x",
      "2020-01-01T00:00 past",
      "2027-13-45T99:99 x",
      "yesterday x",
      "\u0000 x",
    ]) {
      const r = parseWhen(input, "Europe/Paris", now);
      expect("error" in r, input).toBe(true);
    }
    expect(parseDuration("10m")).toBe(600_000);
    expect(parseDuration("1x")).toBeUndefined();
    expect(() => checkTiming({ kind: "once", spec: "3027-01-01T00:00:00Z", timezone: "UTC" })).toThrow(/too far ahead/);
    expect(() => checkTiming({ kind: "cron", spec: "0 9 * * *", timezone: "Mars/Olympus" })).toThrow(/Unknown time zone/);
  });

  it("keeps an interval's phase after a late run", () => {
    const t = { kind: "every" as const, spec: "3600000", timezone: "UTC" };
    const due = new Date("2027-01-01T10:00:00Z");
    expect(nextAfter(t, new Date("2027-01-01T12:20:00Z"), due)?.toISOString()).toBe("2027-01-01T13:00:00.000Z");
    expect(zonedTime("Europe/Paris", 2027, 3, 28, 2, 30).toISOString()).toBe("2027-03-28T01:30:00.000Z"); // in the gap: 03:30 CEST
  });
});
