/**
 * Where schedule state lives in Redis, all under the queue prefix (QUEUE_PREFIX) so one prefix is one
 * tickwork installation. Per schedule:
 * - `cursor`: nominal time (ms) of the last occurrence the scheduler has dealt with (enqueued or recorded);
 * - `history` (zset, score = nominal ms) + `records` (hash id -> JSON): the last HISTORY_CAP occurrences;
 * - `last-success` / `last-failure`: never trimmed.
 */
export function scheduleKeys(prefix: string, schedule: string) {
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
 * How long a removed schedule's state (cursor, history, last success and failure) is kept for inspection
 * before Redis drops it; registering the schedule again keeps it for good.
 */
export const REMOVED_SCHEDULE_STATE_TTL_MS = 30 * 24 * 3600_000;

/** Hash: schedule name -> JSON registration. Reconcile makes it equal the catalog. */
export function scheduleRegistryKey(prefix: string): string {
  return `${prefix}:meta:schedules`;
}

/** `<schedule>@<nominal ISO UTC>`: the occurrence's idempotency key and its history id. */
export function occurrenceKey(schedule: string, nominal: Date): string {
  return `${schedule}@${nominal.toISOString()}`;
}

/**
 * The BullMQ job id of an occurrence: the occurrence key without ':' (BullMQ forbids it in ids), e.g.
 * `billing.charge-monthly@2026-01-01T000000.000Z`. Deterministic, so every replica adds the same job.
 */
export function occurrenceJobId(schedule: string, nominal: Date): string {
  return occurrenceKey(schedule, nominal).replaceAll(':', '');
}
