import fs from "node:fs";
import path from "node:path";

/**
 * A small reader for the project's Dockerfile, so test/deploy/dockerfile.slow.test.ts
 * runs the steps written there rather than a copy of them. It understands what
 * the file uses: FROM ... AS, WORKDIR, COPY [--from=], RUN, ENV, USER, VOLUME,
 * EXPOSE, HEALTHCHECK ... CMD and CMD in exec form, line continuations and
 * comments. Anything else is an error, so a new instruction cannot slip past
 * the test unread.
 */
export interface Copy {
  from?: string;
  sources: string[];
  dest: string;
}

export interface Stage {
  name: string;
  image: string;
  workdir: string;
  env: Record<string, string>;
  steps: Array<{ kind: "copy"; copy: Copy } | { kind: "run"; command: string }>;
  user?: string;
  volumes: string[];
  expose: number[];
  healthcheck?: { options: Record<string, string>; cmd: string[] };
  cmd?: string[];
}

function logicalLines(text: string): string[] {
  const out: string[] = [];
  let current = "";
  for (const raw of text.split("\n")) {
    const line = raw.trimEnd();
    if (!current && (line.trim() === "" || line.trimStart().startsWith("#"))) continue;
    if (current && line.trimStart().startsWith("#")) continue; // comments inside a continued instruction
    if (line.endsWith("\\")) {
      current += `${line.slice(0, -1)} `;
      continue;
    }
    out.push((current + line).trim());
    current = "";
  }
  if (current.trim()) out.push(current.trim());
  return out;
}

function parseEnv(args: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const m of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|\S*)/g)) {
    env[m[1]!] = m[2]!.startsWith('"') ? (JSON.parse(m[2]!) as string) : m[2]!;
  }
  return env;
}

function execForm(args: string, what: string): string[] {
  const parsed = JSON.parse(args) as unknown;
  if (!Array.isArray(parsed) || !parsed.every((a) => typeof a === "string")) throw new Error(`${what} must use the exec form (a JSON array): ${args}`);
  return parsed as string[];
}

export function parseDockerfile(file: string): Stage[] {
  const stages: Stage[] = [];
  for (const line of logicalLines(fs.readFileSync(file, "utf8"))) {
    const [, instruction, args = ""] = /^(\S+)\s*(.*)$/.exec(line)!;
    const op = instruction!.toUpperCase();
    if (op === "FROM") {
      const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      if (!m) throw new Error(`unreadable FROM: ${line}`);
      stages.push({ name: m[2] ?? `stage${stages.length}`, image: m[1]!, workdir: "/", env: {}, steps: [], volumes: [], expose: [] });
      continue;
    }
    const stage = stages.at(-1);
    if (!stage) throw new Error(`${op} before FROM`);
    switch (op) {
      case "WORKDIR":
        stage.workdir = path.posix.resolve(stage.workdir, args);
        break;
      case "ENV":
        Object.assign(stage.env, parseEnv(args));
        break;
      case "COPY": {
        const words = args.split(/\s+/);
        const from = words[0]!.startsWith("--from=") ? words.shift()!.slice("--from=".length) : undefined;
        if (words.some((w) => w.startsWith("--"))) throw new Error(`unsupported COPY option: ${line}`);
        const dest = words.pop()!;
        stage.steps.push({ kind: "copy", copy: { from, sources: words, dest } });
        break;
      }
      case "RUN":
        stage.steps.push({ kind: "run", command: args });
        break;
      case "USER":
        stage.user = args;
        break;
      case "VOLUME":
        stage.volumes.push(...(args.startsWith("[") ? execForm(args, "VOLUME") : args.split(/\s+/)));
        break;
      case "EXPOSE":
        stage.expose.push(...args.split(/\s+/).map((p) => Number.parseInt(p, 10)));
        break;
      case "HEALTHCHECK": {
        const m = /^((?:--\S+\s+)*)CMD\s+(\[.*\])$/.exec(args);
        if (!m) throw new Error(`HEALTHCHECK must be [--options] CMD [exec form]: ${line}`);
        const options = Object.fromEntries(
          m[1]!
            .trim()
            .split(/\s+/)
            .filter(Boolean)
            .map((o) => o.replace(/^--/, "").split("=") as [string, string]),
        );
        stage.healthcheck = { options, cmd: execForm(m[2]!, "HEALTHCHECK CMD") };
        break;
      }
      case "CMD":
        stage.cmd = execForm(args, "CMD");
        break;
      default:
        throw new Error(`test/deploy/dockerfile.ts does not understand ${op} yet: teach it, so the test keeps running every step (${line})`);
    }
  }
  return stages;
}

/** Lines of .dockerignore as simple patterns: a name or path, matched against each path's segments and prefixes. */
export function dockerIgnore(file: string): (rel: string) => boolean {
  const patterns = fs.existsSync(file)
    ? fs
        .readFileSync(file, "utf8")
        .split("\n")
        .map((l) => l.trim())
        .filter((l) => l && !l.startsWith("#"))
    : [];
  const toRegex = (p: string) => new RegExp(`^${p.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]*")}(/.*)?$`);
  const res = patterns.map(toRegex);
  return (rel) => res.some((r) => r.test(rel));
}
