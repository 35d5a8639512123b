/**
 * The histogram every timeline keeps of a duration (a job's wait, its run, a schedule's fire lag): fixed
 * log-scale buckets, so the counts of many workers add up in Redis and a percentile is read after merging.
 *
 * Bucket 0 holds durations under 1 ms; bucket i (1..22) holds [2^(i-1), 2^i) ms; bucket 23 everything from
 * 2^22 ms (about 70 minutes). Each bucket spans a doubling, so a percentile read from them is exact to within
 * its bucket: percentile() interpolates inside it (geometrically), never off by more than a factor of 2.
 */
export const BUCKETS = 24;
export const LAST_BUCKET = BUCKETS - 1;

/** The bucket of `ms`: a few integer operations (it runs on every job). */
export function bucketOf(ms: number): number {
  if (!(ms >= 1)) return 0; // under 1 ms, negative (clocks apart) or NaN
  // clz32 takes the integer part; 2^31 ms and more is the last bucket anyway.
  const b = 32 - Math.clz32(ms >= 0x7fffffff ? 0x7fffffff : ms);
  return b > LAST_BUCKET ? LAST_BUCKET : b;
}

/** The bounds of bucket `i` in ms: [lo, hi); the last one's hi is Infinity. */
export function bucketBounds(i: number): { lo: number; hi: number } {
  if (i <= 0) return { lo: 0, hi: 1 };
  if (i >= LAST_BUCKET) return { lo: 2 ** (LAST_BUCKET - 1), hi: Infinity };
  return { lo: 2 ** (i - 1), hi: 2 ** i };
}

/** How many durations `counts` holds (`from`: where its BUCKETS counts start). */
export function histogramTotal(counts: ArrayLike<number>, from = 0): number {
  let total = 0;
  for (let i = 0; i < BUCKETS; i++) total += counts[from + i] ?? 0;
  return total;
}

/**
 * The `q` quantile (0.5 for p50, 0.95, 0.99) of the durations counted in `counts[from .. from + BUCKETS)`,
 * in ms, or null when none were counted. Inside its bucket the value is interpolated: linearly in bucket 0,
 * geometrically in the doubling buckets; in the last (open) bucket it is that bucket's lower bound.
 */
export function percentile(counts: ArrayLike<number>, q: number, from = 0): number | null {
  const total = histogramTotal(counts, from);
  if (total === 0) return null;
  const rank = Math.min(Math.max(q, 0), 1) * total;
  let below = 0;
  for (let i = 0; i < BUCKETS; i++) {
    const n = counts[from + i] ?? 0;
    if (n === 0) continue;
    if (below + n >= rank) {
      const f = Math.min(Math.max((rank - below) / n, 0), 1);
      const { lo, hi } = bucketBounds(i);
      if (i === 0) return f * hi;
      if (hi === Infinity) return lo;
      return lo * 2 ** f;
    }
    below += n;
  }
  return bucketBounds(LAST_BUCKET).lo;
}
