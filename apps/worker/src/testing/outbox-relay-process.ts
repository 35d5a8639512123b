/**
 * Test-only: an outbox relay in a process of its own that adds its first batch to BullMQ and then holds
 * its transaction open forever (before the rows' DELETE and COMMIT), so a test can kill -9 it exactly
 * there. Env: REDIS_URL, FX_DATABASE_URL.
 */
import { createLogger, createRedis, QueueSet } from '@tickwork/core';
import { createPgPool, startOutboxRelay } from '@tickwork/exactly-once';
import { catalog } from './pg-fixtures.js';

const log = createLogger('outbox-relay-process');
const redis = createRedis(process.env.REDIS_URL ?? '', 'command');
const pool = createPgPool(process.env.FX_DATABASE_URL ?? '', log);
startOutboxRelay({
  pool,
  queues: new QueueSet(redis, 'tickwork', log),
  catalog,
  log,
  async afterAdd(jobIds) {
    if (jobIds.length === 0) return;
    log.info({ jobIds }, 'jobs added; holding the transaction');
    await new Promise(() => undefined);
  },
});
