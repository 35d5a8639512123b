/**
 * A memo by value with a size bound: the schedule code's caches of pure, costly results (compiled patterns,
 * zone offsets per day, zone and pattern checks), which a million schedules share few distinct keys of.
 * When full, the oldest entry goes. `undefined` is not a value it can keep.
 */
export function boundedCache<V>(max: number): (key: string, compute: () => V) => V {
  const entries = new Map<string, V>();
  return (key, compute) => {
    const hit = entries.get(key);
    if (hit !== undefined) return hit;
    const value = compute();
    if (entries.size >= max) entries.delete(entries.keys().next().value as string);
    entries.set(key, value);
    return value;
  };
}
