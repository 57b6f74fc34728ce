/**
 * The adapter contract, re-exported for adapters/<platform>/. The types live
 * in src/gateway so the gateway can use them without importing an adapter.
 */
export * from "../src/gateway/contract.js";
export * from "../src/gateway/adapter.js";
