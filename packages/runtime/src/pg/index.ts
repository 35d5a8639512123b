export type { Pool, PoolClient } from 'pg';
export { createPgPool, inTransaction } from './pool.js';
export { TICKWORK_PG_SCHEMA, migrateTickworkTables } from './schema.js';
export { pgStep, pruneSteps, recordedStep, DEFAULT_PG_STEP_RETENTION_MS, type PgStepRun } from './step.js';
export { enqueueInTransaction, outboxJobId, type OutboxEnqueueOptions } from './outbox.js';
export { relayOutboxOnce, startOutboxRelay, type OutboxRelay, type OutboxRelayOptions, type RelayPass } from './relay.js';
