import type { Pool } from 'pg';
import type { Logger } from '@tickwork/core';
import { sqlState } from './pool.js';
import { repeatPass, type RepeatedPass } from '../repeat-pass.js';

/** How long rows are kept by default: as long as Redis keeps an unfinished run's steps (IDEMPOTENCY_UNFINISHED_RETENTION_HOURS). */
export const DEFAULT_PG_STEP_RETENTION_MS = 7 * 24 * 3600_000;
/** Rows deleted per statement: each DELETE is its own short transaction, so it never holds many row locks at once. */
const DEFAULT_BATCH = 1000;
/** How often a pruner looks for rows past their retention. */
const DEFAULT_INTERVAL_MS = 10 * 60_000;

/**
 * Deletes `tickwork_steps` rows recorded more than `olderThanMs` ago, `batchSize` rows per statement until
 * none is left, and returns how many went. A row is kept as long as a run can still be resumed from it: an
 * unfinished run keeps its Redis record and steps for the unfinished-run retention (7 days by default), and
 * a re-drive within it must find its PostgreSQL steps too, or it would run them (charge, write) again. A
 * done run never reads them again, but a row does not say whether its run is done, so all rows get that long.
 *
 * Each batch takes the oldest rows by `recorded_at` (its index) and skips rows locked by a transaction in
 * flight (`FOR UPDATE SKIP LOCKED`): a step being committed is never waited on, and pruners in several
 * workers take different rows.
 */
export async function pruneSteps(pool: Pool, olderThanMs = DEFAULT_PG_STEP_RETENTION_MS, batchSize = DEFAULT_BATCH, stopped: () => boolean = () => false): Promise<number> {
  let deleted = 0;
  for (;;) {
    const { rowCount } = await pool.query(
      `DELETE FROM tickwork_steps WHERE ctid = ANY(ARRAY(
         SELECT ctid FROM tickwork_steps WHERE recorded_at < now() - make_interval(secs => $1::double precision / 1000)
         ORDER BY recorded_at LIMIT $2 FOR UPDATE SKIP LOCKED))`,
      [olderThanMs, batchSize],
    );
    deleted += rowCount ?? 0;
    if ((rowCount ?? 0) < batchSize || stopped()) return deleted;
  }
}

export interface StepPrunerOptions {
  pool: Pool;
  log: Logger;
  /** Rows recorded longer ago are deleted. Default 7 days. */
  olderThanMs?: number;
  /** How often it looks. Default 10 minutes. */
  intervalMs?: number;
  /** Rows per DELETE. Default 1000. */
  batchSize?: number;
}

export interface StepPruner {
  /** One pass: every row past its retention, in batches. */
  pruneOnce(): Promise<number>;
  /** Stops after the batch in flight. */
  stop(): Promise<void>;
}

/**
 * Prunes `tickwork_steps` on a timer (pruneSteps): a pass at start, then every `intervalMs`. The worker runs
 * one on its PostgreSQL pool (OUTBOX_DATABASE_URL), so rows of finished runs never pile up. A failed pass
 * (PostgreSQL unreachable) is logged and tried again at the next one: each batch commits on its own.
 */
export function startStepPruner(opts: StepPrunerOptions): StepPruner {
  const { pool, log } = opts;
  const olderThanMs = opts.olderThanMs ?? DEFAULT_PG_STEP_RETENTION_MS;
  const intervalMs = opts.intervalMs ?? DEFAULT_INTERVAL_MS;
  // The loop below starts its first pass before repeatPass returns: until then it is not stopped.
  let repeated: RepeatedPass | undefined;
  const stopped = (): boolean => repeated?.isStopped() ?? false;
  const pruneOnce = () => pruneSteps(pool, olderThanMs, opts.batchSize ?? DEFAULT_BATCH, stopped);
  const loop = repeatPass(intervalMs, async () => {
    try {
      const deleted = await pruneOnce();
      if (deleted > 0) log.info({ deleted, olderThanMs }, 'PostgreSQL step rows past their retention deleted');
    } catch (err) {
      // Never the error object itself: pg-pool may hang the client, with its password, on it.
      log.warn({ reason: (err as Error).message, code: sqlState(err) }, 'tickwork_steps prune failed; retrying at the next pass');
    }
  });
  repeated = loop;
  return { pruneOnce, stop: () => loop.stop() };
}
