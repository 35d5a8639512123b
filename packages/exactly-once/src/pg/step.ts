import type { Pool, PoolClient } from 'pg';
import { LeaseLostError, StepError } from '../ledger/errors.js';
import { assertStepId, stepKey, stepRecordedBy } from '../ledger/steps.js';
import { traced, tracesOn, type StepInfo } from '@tickwork/core';
import { inTransaction } from './pool.js';

/** What `pgStep` needs of the job's context (`ctx` fits). */
export interface PgStepRun {
  readonly idempotencyKey: string;
  /** Aborted when the run loses its lease, times out or the worker stops past its drain deadline. */
  readonly signal: AbortSignal;
}

/**
 * A step whose effect and record commit together: `fn` runs inside BEGIN ... COMMIT on one client of the
 * user's `pool`, and the same transaction records its result in `tickwork_steps` under
 * (ctx.idempotencyKey, id). Either both commit or neither does, so a crash anywhere, even between the
 * effect and COMMIT, leaves no effect without a record: the retry runs the step again from scratch.
 * A recorded step returns its recorded result without running `fn`.
 *
 * `fn` must do its effect through `client` (the transaction's connection); writes through another
 * connection, or calls to other systems, are not part of the transaction.
 *
 * How two deliveries of the same run (a takeover while the old holder still runs) cannot both commit:
 * the step's row is claimed first, `INSERT ... ON CONFLICT DO NOTHING` on the primary key, before `fn`
 * runs. PostgreSQL makes a second insert of the same key wait for the transaction holding the first one;
 * when that commits, the second inserts nothing (rowCount 0) and returns the recorded result without
 * running `fn`; when it rolls back, the second claims the row and runs `fn`. This holds whatever the
 * lease says. The lease is a cheaper, earlier fence on top: `fn` is not started, and nothing is
 * committed, once `ctx.signal` is aborted (the run was taken over, timed out or is being stopped).
 */
export async function pgStep<T>(run: PgStepRun, pool: Pool, id: string, fn: (client: PoolClient, step: StepInfo) => Promise<T>): Promise<T> {
  assertStepId(id);
  // Traces on: a span per step, as ctx.step's (telemetry/traces.ts); off, the step itself and nothing more.
  return tracesOn() ? traced('tickwork.step', { 'tickwork.step.id': id, 'tickwork.step.kind': 'pg' }, () => runPgStep(run, pool, id, fn)) : runPgStep(run, pool, id, fn);
}

async function runPgStep<T>(run: PgStepRun, pool: Pool, id: string, fn: (client: PoolClient, step: StepInfo) => Promise<T>): Promise<T> {
  const recorded = await recordedStep(pool, run.idempotencyKey, id);
  if (recorded) return recorded.value as T;
  run.signal.throwIfAborted();

  const outcome = await inTransaction(pool, async (client) => {
    const claim = await client.query(
      'INSERT INTO tickwork_steps (run_key, step_id) VALUES ($1, $2) ON CONFLICT DO NOTHING',
      [run.idempotencyKey, id],
    );
    // Another delivery committed this step while this one waited on its row: take its result.
    if (claim.rowCount === 0) return { ran: false as const };
    run.signal.throwIfAborted();
    const value = await fn(client, { id, key: stepKey(run.idempotencyKey, id) });
    const json = value === undefined ? null : JSON.stringify(value);
    if (value !== undefined && json === undefined) {
      throw new StepError(id, 'returned a value that is not JSON-serialisable; return plain data');
    }
    await client.query(
      'UPDATE tickwork_steps SET result = $3::jsonb, recorded_at = now() WHERE run_key = $1 AND step_id = $2',
      [run.idempotencyKey, id, json],
    );
    if (run.signal.aborted) throw new LeaseLostError(run.idempotencyKey, `before committing PostgreSQL step "${id}"`);
    return { ran: true as const, json };
  });
  if (outcome.ran) {
    await stepRecordedBy(run); // progress: a run in a crash loop that keeps committing steps is not stalled
    return (outcome.json === null ? undefined : JSON.parse(outcome.json)) as T;
  }
  const winner = await recordedStep(pool, run.idempotencyKey, id);
  if (!winner) throw new StepError(id, 'was committed by another delivery but its record is gone (pruned?)');
  return winner.value as T;
}

/**
 * The recorded result of a step, or undefined if none committed. SQL NULL is a step that returned
 * undefined; jsonb 'null' one that returned null.
 */
export async function recordedStep(pool: Pool, runKey: string, id: string): Promise<{ value: unknown } | undefined> {
  // pg parses both SQL NULL and jsonb 'null' to null: ask which it was.
  const { rows } = await pool.query<{ result: unknown; undef: boolean }>(
    'SELECT result, result IS NULL AS undef FROM tickwork_steps WHERE run_key = $1 AND step_id = $2',
    [runKey, id],
  );
  const row = rows[0];
  return row ? { value: row.undef ? undefined : row.result } : undefined;
}
