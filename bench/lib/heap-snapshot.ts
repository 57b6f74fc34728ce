// What holds the gateway's heap: a V8 heap snapshot (v8.writeHeapSnapshot) read into
// its dominator tree, so each object's retained size is what would be freed with it.
// Written here rather than taken from a library: the maintained analysers (memlab,
// Chrome DevTools' front end) pull in a browser; this needs ~150 lines and no dependency.
import fs from "node:fs";

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}

export interface Retainer {
  /** `Constructor` for an object, `(type) name` otherwise. */
  what: string;
  retained_mb: number;
  self_kb: number;
  /** The dominator chain from the root, outermost first, for finding it in the code. */
  path: string[];
}

export interface HeapReport {
  total_mb: number;
  nodes: number;
  /** The largest dominator subtrees, each not mostly inside one already listed. */
  top_retainers: Retainer[];
  /** Self size summed by constructor (what the heap is made of). */
  by_constructor: { what: string; count: number; self_mb: number; retained_mb: number }[];
  /** For each constructor asked about: how many of its objects are reachable, and the dominator paths of up to three. */
  explained?: Record<string, { count: number; paths: string[][] }>;
}

const MB = 1024 * 1024;
const r1 = (n: number) => Math.round(n * 10) / 10;

/** Reads a .heapsnapshot file and reports what retains its memory. */
export function analyseHeapSnapshot(file: string, top = 12, explain: string[] = []): HeapReport {
  const snap = JSON.parse(fs.readFileSync(file, "utf8")) as Snapshot;
  const meta = snap.snapshot.meta;
  const NF = meta.node_fields.length;
  const EF = meta.edge_fields.length;
  const nType = meta.node_fields.indexOf("type");
  const nName = meta.node_fields.indexOf("name");
  const nSelf = meta.node_fields.indexOf("self_size");
  const nEdges = meta.node_fields.indexOf("edge_count");
  const eType = meta.edge_fields.indexOf("type");
  const eName = meta.edge_fields.indexOf("name_or_index");
  const eTo = meta.edge_fields.indexOf("to_node");
  const nodeTypes = meta.node_types[0];
  const edgeTypes = meta.edge_types[0];
  const weak = edgeTypes.indexOf("weak");
  const shortcut = edgeTypes.indexOf("shortcut");
  const { nodes, edges, strings } = snap;
  const n = nodes.length / NF;

  // Successors (strong edges only: a weak reference retains nothing).
  const firstEdge = new Uint32Array(n + 1);
  for (let i = 0, e = 0; i < n; i++) {
    firstEdge[i] = e;
    e += nodes[i * NF + nEdges]! * EF;
    firstEdge[i + 1] = e;
  }
  const succ = (v: number, f: (w: number) => void) => {
    for (let e = firstEdge[v]!; e < firstEdge[v + 1]!; e += EF) {
      const t = edges[e + eType]!;
      if (t === weak || t === shortcut) continue;
      f(edges[e + eTo]! / NF);
    }
  };

  // Depth-first order from the root (node 0), iteratively.
  const order = new Int32Array(n).fill(-1);
  const vertex = new Int32Array(n);
  const parent = new Int32Array(n);
  let count = 0;
  const stack: number[] = [0];
  const stackParent: number[] = [0];
  while (stack.length) {
    const v = stack.pop()!;
    const p = stackParent.pop()!;
    if (order[v] !== -1) continue;
    order[v] = count;
    vertex[count] = v;
    parent[v] = p;
    count++;
    succ(v, (w) => {
      if (order[w] === -1) {
        stack.push(w);
        stackParent.push(v);
      }
    });
  }
  // Predecessors of reachable nodes.
  const predCount = new Uint32Array(n + 1);
  for (let v = 0; v < n; v++) if (order[v] !== -1) succ(v, (w) => void predCount[w + 1]!++);
  for (let i = 0; i < n; i++) predCount[i + 1]! += predCount[i]!;
  const preds = new Int32Array(predCount[n]!);
  const fill = predCount.slice(0, n);
  for (let v = 0; v < n; v++) if (order[v] !== -1) succ(v, (w) => void (preds[fill[w]!++] = v));

  // Cooper, Harvey and Kennedy's iterative dominators over the DFS order.
  const idom = new Int32Array(n).fill(-1);
  idom[0] = 0;
  const intersect = (a: number, b: number) => {
    while (a !== b) {
      while (order[a]! > order[b]!) a = idom[a]!;
      while (order[b]! > order[a]!) b = idom[b]!;
    }
    return a;
  };
  for (let changed = true; changed; ) {
    changed = false;
    for (let k = 1; k < count; k++) {
      const v = vertex[k]!;
      let d = -1;
      for (let p = predCount[v]!; p < predCount[v + 1]!; p++) {
        const u = preds[p]!;
        if (idom[u] === -1) continue;
        d = d === -1 ? u : intersect(u, d);
      }
      if (d !== -1 && idom[v] !== d) {
        idom[v] = d;
        changed = true;
      }
    }
  }
  void parent;

  // Retained size: each node's self size added up its dominator chain, deepest first.
  const retained = new Float64Array(n);
  for (let v = 0; v < n; v++) if (order[v] !== -1) retained[v] = nodes[v * NF + nSelf]!;
  for (let k = count - 1; k > 0; k--) {
    const v = vertex[k]!;
    retained[idom[v]!]! += retained[v]!;
  }

  const label = (v: number) => {
    const type = nodeTypes[nodes[v * NF + nType]!]!;
    const name = strings[nodes[v * NF + nName]!]!.slice(0, 60);
    return type === "object" || type === "closure" ? `${name}${type === "closure" ? "()" : ""}` : `(${type}) ${name}`;
  };

  const reachable: number[] = [];
  for (let k = 1; k < count; k++) reachable.push(vertex[k]!);
  // Skip the synthetic roots (GC roots, handle scopes) and nodes mostly inside one already chosen.
  const sorted = reachable.filter((v) => nodeTypes[nodes[v * NF + nType]!] !== "synthetic").sort((a, b) => retained[b]! - retained[a]!);
  const chosen: number[] = [];
  for (const v of sorted) {
    if (chosen.length >= top) break;
    let inside = false;
    for (let x = idom[v]!; x !== 0; x = idom[x]!) if (chosen.includes(x) && retained[v]! > 0.5 * retained[x]!) inside = true;
    if (!inside) chosen.push(v);
  }
  // A holder (the global object, a module's scope) names less than what it holds: go down
  // to the object that has nearly all of it (a Map, a pool), not into its internal arrays.
  for (let i = 0; i < chosen.length; i++) {
    for (let x = chosen[i]!, next = -1; ; x = next, next = -1) {
      for (const c of reachable) if (idom[c] === x && nodeTypes[nodes[c * NF + nType]!] === "object" && retained[c]! >= 0.9 * retained[x]!) next = c;
      if (next === -1) {
        chosen[i] = x;
        break;
      }
    }
  }
  const edgeName = (from: number, to: number) => {
    for (let e = firstEdge[from]!; e < firstEdge[from + 1]!; e += EF) {
      if (edges[e + eTo]! / NF !== to) continue;
      const t = edgeTypes[edges[e + eType]!];
      const name = edges[e + eName]!;
      return t === "element" || t === "hidden" ? `[${name}]` : `.${strings[name]}`;
    }
    return " > ";
  };
  // Each step names the property it is reached by when the dominator holds it directly.
  const path = (v: number) => {
    const out: string[] = [];
    for (let child = v, x = idom[v]!; x !== 0 && out.length < 12; child = x, x = idom[x]!) out.unshift(`${label(x)}${edgeName(x, child)}`);
    return out;
  };

  // Grouped by constructor for objects and closures, by type for the rest (a string's
  // name is its text, a code object's its script).
  const kind = (v: number) => {
    const type = nodeTypes[nodes[v * NF + nType]!]!;
    return type === "object" || type === "closure" || type === "native" ? label(v) : `(${type})`;
  };
  const byCtor = new Map<string, { count: number; self: number; retained: number }>();
  for (const v of reachable) {
    const w = kind(v);
    const e = byCtor.get(w) ?? { count: 0, self: 0, retained: 0 };
    e.count++;
    e.self += nodes[v * NF + nSelf]!;
    // Counted once per subtree: only where the dominator is of another kind.
    if (kind(idom[v]!) !== w) e.retained += retained[v]!;
    byCtor.set(w, e);
  }
  const explained: Record<string, { count: number; paths: string[][] }> = {};
  for (const what of explain) {
    const found = reachable.filter((v) => kind(v) === what);
    const paths = [0, Math.floor(found.length / 2), found.length - 1]
      .filter((i, k, a) => found[i] !== undefined && a.indexOf(i) === k)
      .map((i) => path(found[i]!));
    explained[what] = { count: found.length, paths };
  }
  let total = 0;
  for (const v of reachable) total += nodes[v * NF + nSelf]!;
  return {
    total_mb: r1(total / MB),
    nodes: count,
    top_retainers: chosen.map((v) => ({
      what: label(v),
      retained_mb: r1(retained[v]! / MB),
      self_kb: Math.round(nodes[v * NF + nSelf]! / 1024),
      path: path(v),
    })),
    by_constructor: [...byCtor.entries()]
      .sort((a, b) => b[1].self - a[1].self)
      .slice(0, top)
      .map(([what, e]) => ({ what, count: e.count, self_mb: r1(e.self / MB), retained_mb: r1(e.retained / MB) })),
    ...(explain.length ? { explained } : {}),
  };
}
