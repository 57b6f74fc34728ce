// Where a process's resident memory is, from Linux's /proc/<pid>/smaps, with V8's own
// account of its heap spaces (v8.getHeapSpaceStatistics, asked of the gateway child):
// what RSS is made of, which the heap snapshot (live JS objects only) cannot say.
import fs from "node:fs";

export interface HeapSpace {
  space_name: string;
  space_size: number;
  space_used_size: number;
  physical_space_size: number;
}

export interface RssAttribution {
  rss_mb: number;
  /** The node executable's mappings (text and data; shared with every node process on the host). */
  node_binary_mb: number;
  /** Other files mapped in: shared libraries, better-sqlite3's addon, ICU data. */
  other_files_mb: number;
  /** The main malloc arena ([heap]): Node's and SQLite's allocations on the main thread, the page cache included. */
  malloc_main_mb: number;
  /** Anonymous mappings: V8's heap spaces, other threads' malloc arenas, large mallocs, stacks. */
  anonymous_mb: number;
  /** V8's heap spaces as V8 counts them: pages it holds (physical) and what is in use. */
  v8_spaces_mb: Record<string, { physical: number; used: number }>;
  v8_physical_mb: number;
  /** Anonymous memory V8's spaces do not account for: thread arenas, ArrayBuffers' backing stores, stacks, SQLite pages malloc'd off the main arena. */
  anonymous_not_v8_mb: number;
}

const MB = 1024 * 1024;
const r1 = (n: number) => Math.round(n * 10) / 10;

/** Sums Rss over /proc/<pid>/smaps by what is mapped; `spaces` from the process itself. */
export function attributeRss(pid: number, spaces: HeapSpace[]): RssAttribution {
  const text = fs.readFileSync(`/proc/${pid}/smaps`, "utf8");
  const exe = fs.readlinkSync(`/proc/${pid}/exe`);
  let rss = 0;
  let binary = 0;
  let files = 0;
  let mallocMain = 0;
  let anon = 0;
  let name = "";
  for (const line of text.split("\n")) {
    // A mapping's header: "start-end perms offset dev inode [path]".
    const header = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (header) {
      name = header[1] ?? "";
      continue;
    }
    const m = /^Rss:\s+(\d+) kB/.exec(line);
    if (!m) continue;
    const bytes = Number(m[1]) * 1024;
    rss += bytes;
    if (name === exe) binary += bytes;
    else if (name === "[heap]") mallocMain += bytes;
    else if (name.startsWith("/")) files += bytes;
    else anon += bytes;
  }
  const v8: Record<string, { physical: number; used: number }> = {};
  let physical = 0;
  for (const s of spaces) {
    v8[s.space_name] = { physical: r1(s.physical_space_size / MB), used: r1(s.space_used_size / MB) };
    physical += s.physical_space_size;
  }
  return {
    rss_mb: r1(rss / MB),
    node_binary_mb: r1(binary / MB),
    other_files_mb: r1(files / MB),
    malloc_main_mb: r1(mallocMain / MB),
    anonymous_mb: r1(anon / MB),
    v8_spaces_mb: v8,
    v8_physical_mb: r1(physical / MB),
    anonymous_not_v8_mb: r1((anon - physical) / MB),
  };
}
