/**
 * The agents' catalog (src/agent/catalog.ts): the agent of a session by its
 * agent id, an agent the file no longer has answered by `default` and said
 * once in the log, and the persona precedence (the session's own choice, its
 * agent's, the default persona; a persona naming a PERSONAS entry is that
 * entry's text).
 */
import { describe, expect, it } from "vitest";
import { agentCatalog } from "../../src/agent/catalog.js";
import { DEFAULT_PERSONA_PROMPT, personas } from "../../src/agent/personas.js";
import { parseAgentsConfig } from "../../src/config/agents.js";
import { agentIdFor } from "../../src/session/agent-id.js";
import { capturedLogger } from "../reliability/helpers.js";

const file = {
  agents: {
    support: { persona: "You answer support questions." },
    pirate: { persona: "pirate", toolMaxRounds: 0 },
  },
};

function catalog(lines: string[] = []) {
  return agentCatalog(
    parseAgentsConfig(JSON.stringify(file), {}, {}),
    { maxToolRounds: 4, log: capturedLogger(lines) },
    personas({ pirate: "Talk like a pirate." }),
  );
}

describe("the agents' catalog", () => {
  it("finds a session's agent by its agent id, default first in the list", () => {
    const c = catalog();
    expect(c.list().map((a) => a.name)).toEqual(["default", "support", "pirate"]);
    expect(c.of("777").name).toBe("default");
    expect(c.of(agentIdFor("777", "support")).name).toBe("support");
    expect(c.of(agentIdFor("777", "pirate")).toolMaxRounds).toBe(0);
    expect(c.of(agentIdFor("777", "support")).toolMaxRounds).toBe(4);
  });

  it("an agent the file no longer has is answered by default, and the log says so once", () => {
    const lines: string[] = [];
    const c = catalog(lines);
    expect(c.of("777~gone").name).toBe("default");
    expect(c.of("778~gone").name).toBe("default");
    const said = lines.filter((l) => l.includes("is not in AGENTS_CONFIG any more"));
    expect(said).toHaveLength(1);
    expect(JSON.parse(said[0]!).agent).toBe("gone");
  });

  it("persona: the session's own choice, else its agent's (a PERSONAS name is that entry), else the default persona", () => {
    const c = catalog();
    expect(c.personaOf({ agentId: "777~support" })).toBe("You answer support questions.");
    expect(c.personaOf({ agentId: "777~pirate" })).toBe("Talk like a pirate.");
    expect(c.personaOf({ agentId: "777~support", persona: "pirate" })).toBe("Talk like a pirate.");
    expect(c.personaOf({ agentId: "777" })).toBe(DEFAULT_PERSONA_PROMPT);
  });
});
