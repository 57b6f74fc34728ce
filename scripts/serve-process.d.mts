/** The Node flags `npm start` gives the gateway (see serve-process.mjs). */
export declare const SERVE_NODE_FLAGS: readonly string[];
/** The environment `npm start` starts the gateway with, before Node itself starts. */
export declare const SERVE_ENV: Readonly<Record<string, string>>;
