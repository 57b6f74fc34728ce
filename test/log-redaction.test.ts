import { describe, expect, it } from "vitest";
import { redactSecrets, registerSecret } from "../src/log.js";

describe("secrets in log lines", () => {
  it("a secret that contains another registered secret is masked whole, whichever was registered first", () => {
    const short = `xoxe-1-${Math.random().toString(36).slice(2, 10)}`;
    const long = `${short}-and-its-tail`;
    registerSecret(short);
    registerSecret(long);
    expect(redactSecrets(`a ${long} and a ${short}`)).toBe("a [redacted] and a [redacted]");
    const before = `xoxb-${Math.random().toString(36).slice(2, 10)}-whole`;
    registerSecret(before);
    registerSecret(before.slice(0, -6));
    expect(redactSecrets(before)).toBe("[redacted]");
  });
});
