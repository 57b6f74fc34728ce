import type { Adapter } from "../../adapters/types.js";

/** Lifts an adapter's declared limits, and discord.js's global limiter (see unlimited.mjs). */
export declare function unlimited<A extends Adapter>(a: A): A;
