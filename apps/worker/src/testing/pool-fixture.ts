import { createAlerter } from '@tickwork/operations';
import { createEnqueue, QueueSet, type Catalog } from '@tickwork/core';
import { startRedisServer, type RedisServerHandle } from '@tickwork/testkit';
import type { Redis } from 'ioredis';
import { createDeadLetterRouting, type DeadLetterRouting } from '../dead-letter.js';
import { startWorkerPool, type WorkerPool } from '../worker-pool.js';
import { captureLogger } from './capture-logger.js';

export interface PoolFixture {
  server: RedisServerHandle;
  redis: Redis;
  queues: QueueSet;
  pool: WorkerPool;
  routing: DeadLetterRouting;
  captured: ReturnType<typeof captureLogger>;
  stop(): Promise<void>;
}

/** A private Redis and an in-process worker pool (prefix `tw`) serving `queues`, with DLQ routing and captured logs. */
export async function startPoolFixture(catalog: Catalog, served: readonly string[]): Promise<PoolFixture> {
  const server = await startRedisServer();
  const redis = server.client();
  const captured = captureLogger();
  const log = captured.log;
  const queues = new QueueSet(redis, 'tw', log);
  const alerter = createAlerter({ log, redis, prefix: 'tw' });
  const routing = createDeadLetterRouting({ queues, redis, catalog, log, alerter, sweepIntervalMs: 60_000 });
  const pool = startWorkerPool({
    catalog,
    redis,
    log,
    enqueue: createEnqueue(catalog, queues),
    redisTarget: server.url,
    prefix: 'tw',
    concurrency: 2,
    deadLetter: routing,
    queues: served,
  });
  return {
    server,
    redis,
    queues,
    pool,
    routing,
    captured,
    async stop() {
      await pool.drain(2000);
      await queues.close();
      await server.stop();
    },
  };
}
