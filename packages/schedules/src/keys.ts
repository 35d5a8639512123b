import { encodeScheduleId, historyKeysOf } from './store/shard-keys.js';

/**
 * A schedule's history keys (see schedules/keys.ts for the whole store layout): under its shard's hash tag,
 * - `history` (zset, score = nominal ms) + `records` (hash id -> JSON): the last occurrences, capped;
 * - `last-success` / `last-failure`: never trimmed.
 */
export function scheduleKeys(prefix: string, schedule: string) {
  return historyKeysOf(prefix, schedule);
}

/**
 * The keys of a schedule before the schedule store (one cursor per schedule, visited every tick). Only the
 * migration in schedules/catalog-source.ts reads them: the cursor seeds the due index, the history moves.
 */
export function legacyScheduleKeys(prefix: string, schedule: string) {
  const base = `${prefix}:schedule:${schedule}`;
  return {
    cursor: `${base}:cursor`,
    history: `${base}:history`,
    records: `${base}:records`,
    lastSuccess: `${base}:last-success`,
    lastFailure: `${base}:last-failure`,
  };
}

/**
 * How long a removed schedule's history (and last success and failure) is kept for inspection before
 * Redis drops it; registering the schedule again keeps it for good.
 */
export const REMOVED_SCHEDULE_STATE_TTL_MS = 30 * 24 * 3600_000;

/** Hash: catalog schedule name -> JSON registration (queue, spec, speed-up). Reconcile makes it equal the catalog. */
export function scheduleRegistryKey(prefix: string): string {
  return `${prefix}:meta:schedules`;
}


/**
 * The BullMQ job id of an occurrence, e.g. `billing.charge-monthly@2026-01-01T000000.000Z`: the schedule
 * id encoded (encodeScheduleId: ':' -> %3A) and the time without ':' (BullMQ forbids ':' in ids).
 * Deterministic, so every replica adds the same job.
 */
export function occurrenceJobId(schedule: string, nominal: Date): string {
  return `${encodeScheduleId(schedule)}@${nominal.toISOString().replaceAll(':', '')}`;
}


export function manualOccurrenceJobId(schedule: string, token: string): string {
  return `${encodeScheduleId(schedule)}@manual-${token}`;
}
