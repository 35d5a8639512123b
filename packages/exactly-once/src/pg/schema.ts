import type { Pool } from 'pg';
import { inTransaction } from './pool.js';

/**
 * The tables tickwork keeps in a user's PostgreSQL, created by `tickwork db migrate` (or by running this
 * SQL with your own migration tool; the README prints it). Idempotent: every statement is IF NOT EXISTS.
 *
 * tickwork_steps: one row per recorded PostgreSQL step (`pgStep`), keyed by the run's idempotency key and
 * the step id. The primary key is what makes a step commit once (see step.ts).
 * tickwork_outbox: jobs enqueued inside a transaction (`enqueueInTransaction`), waiting for the relay.
 * A row the relay cannot enqueue (unknown job, invalid payload) is set aside with `failed_at` and
 * `failed_reason`; clearing both makes it eligible again.
 */
export const TICKWORK_PG_SCHEMA = `CREATE TABLE IF NOT EXISTS tickwork_steps (
  run_key     text        NOT NULL,
  step_id     text        NOT NULL,
  result      jsonb,
  recorded_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_key, step_id)
);
CREATE INDEX IF NOT EXISTS tickwork_steps_recorded_at ON tickwork_steps (recorded_at);

CREATE TABLE IF NOT EXISTS tickwork_outbox (
  id            bigserial   PRIMARY KEY,
  job_name      text        NOT NULL,
  queue         text        NOT NULL,
  payload       jsonb       NOT NULL,
  job_id        text,
  opts          jsonb       NOT NULL DEFAULT '{}',
  ordering_key  text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  failed_at     timestamptz,
  failed_reason text
);
CREATE INDEX IF NOT EXISTS tickwork_outbox_key ON tickwork_outbox (ordering_key, id) WHERE failed_at IS NULL;
`;

/** An arbitrary constant: the advisory lock migrators take so two at once do not race on the catalog. */
const MIGRATION_LOCK = 7_461_726_523;

/** Creates tickwork's tables if they are missing. Safe to run any number of times, also concurrently. */
export async function migrateTickworkTables(pool: Pool): Promise<void> {
  await inTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await client.query(TICKWORK_PG_SCHEMA);
  });
}
