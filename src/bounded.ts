/**
 * Sets `k` in a cache that must stay bounded as chats pile up: past `cap`
 * entries the oldest insertion goes first. For caches whose misses cost one
 * indexed read, so evicting a busy entry is harmless.
 */
export function setBounded<K, V>(map: Map<K, V>, k: K, v: V, cap: number): void {
  if (!map.has(k) && map.size >= cap) map.delete(map.keys().next().value as K);
  map.set(k, v);
}
