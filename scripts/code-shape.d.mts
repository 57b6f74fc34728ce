// Types for scripts/code-shape.mjs (test/code-shape.test.ts imports it).
export declare const MAX_FILE_LINES: number;
export declare const MAX_FUNCTION_LINES: number;

export interface LongFile {
  path: string;
  lines: number;
}

export interface LongFunction {
  path: string;
  /** 1-based line the function's code starts on. */
  line: number;
  name: string;
  lines: number;
}

export interface CodeShape {
  files: LongFile[];
  functions: LongFunction[];
}

export declare function longFunctions(file: string, text: string, maxLines?: number): LongFunction[];
export declare function codeShape(options?: { dirs?: string[]; base?: string; maxFileLines?: number; maxFunctionLines?: number }): CodeShape;
export declare function describeShape(shape: CodeShape): string[];
