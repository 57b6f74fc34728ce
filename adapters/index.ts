import type { Config } from "../src/config.js";
import type { Adapter } from "./types.js";

/**
 * Every adapter the configuration turns on. Platform adapters are loaded
 * only when their token is set, so a console-only start never loads an SDK.
 */
export async function adaptersFromConfig(config: Config): Promise<Adapter[]> {
  const out: Adapter[] = [];
  return out;
}
