export * from "./errors.js";
export * from "./info.js";
export * from "./channel.js";
export * from "./binding-key.js";
export * from "./memory-scope.js";
export * from "./registry.js";
export * from "./requests.js";
export * from "./rotation.js";
