import { createHash } from 'node:crypto';

/** The largest `spread` window: a day (a larger offset would move a daily run past the next one). */
export const MAX_SPREAD_MS = 24 * 3600_000;

/**
 * The one rule for a schedule's spread offset: a whole number of seconds in [0, window), from a SHA-256 of
 * the schedule's id (a catalog schedule's id is its job name). Deterministic, so every scheduler replica,
 * the worker's late-run check and every preview agree, and the schedule fires at the same offset every
 * time; SHA-256 rather than a cheap hash so similar ids (`user-1`, `user-2`) land far apart.
 */
export function spreadOffsetMs(id: string, spreadMs: number | null | undefined): number {
  if (!spreadMs || spreadMs < 1000) return 0;
  const seconds = Math.floor(spreadMs / 1000);
  // 48 bits: exact in a double, and uniform enough modulo any window up to a day (86,400 s).
  const h = createHash('sha256').update(id).digest().readUIntBE(0, 6);
  return (h % seconds) * 1000;
}
