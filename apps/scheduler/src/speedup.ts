/**
 * SCHEDULE_SPEEDUP=`every=<n><ms|s|m>` runs every schedule on that interval instead of its own, so a
 * staging environment can exercise a whole day's jobs in minutes. Parsed here; refused in production by env.ts.
 */
const SPEEDUP = /^every=(\d+)(ms|s|m)$/;
const UNIT_MS = { ms: 1, s: 1000, m: 60_000 } as const;

/** The interval in ms, or an error message saying what is wrong and what is expected. */
export function parseSpeedup(value: string): number | string {
  const match = SPEEDUP.exec(value.trim());
  if (!match) return `expected every=<number><ms|s|m>, e.g. every=10s; got ${JSON.stringify(value)}`;
  const ms = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  if (ms < 1000) return `the interval must be at least 1s; got ${JSON.stringify(value)}`;
  return ms;
}
