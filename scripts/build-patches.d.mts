// Types for scripts/build-patches.mjs (test/build-patches.test.ts imports it).
export interface SdkPatch {
  /** The SDK file it rewrites. */
  file: RegExp;
  /** Each [text the file has, text that replaces it]. */
  edits: Array<[string, string]>;
}
export declare const SDK_PATCHES: SdkPatch[];
export declare function patched(path: string, text: string, patch: SdkPatch): string;
