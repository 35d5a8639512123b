import type { Redis } from 'ioredis';
import type { Catalog } from './catalog.js';
import { warnOnRedisMemoryConfig } from './capacity/memory-info.js';
import { createRedis } from './connection.js';
import { loadCatalog } from './load-catalog.js';
import { createLogger, type Logger } from './logger.js';
import { QueueSet } from './queues.js';

/** The env fields every app shares (see env.ts). */
export interface CommonEnv {
  REDIS_URL: string;
  QUEUE_PREFIX: string;
  LOG_LEVEL: string;
  JOBS_MODULE?: string | undefined;
}

export interface AppContext {
  log: Logger;
  catalog: Catalog;
  /** Command connection (see connection.ts); blocking connections are made per Worker. */
  redis: Redis;
  queues: QueueSet;
  close(): Promise<void>;
}

/**
 * What every app opens at start, in the same order: its logger, the catalog (which validates every job,
 * so a bad definition stops start-up here), a command connection that logs instead of crashing on
 * connection errors, and the queues. It also warns, without waiting, when Redis's memory settings put the
 * queues at risk (no maxmemory, or a policy that evicts keys).
 */
export async function openAppContext(
  app: string,
  env: CommonEnv,
  defaultCatalog: () => Promise<Catalog>,
): Promise<AppContext> {
  const log = createLogger(app, env.LOG_LEVEL);
  const catalog = await loadCatalog(env.JOBS_MODULE, defaultCatalog);
  const redis = createRedis(env.REDIS_URL, 'command');
  redis.on('error', (err) => log.warn({ err: { message: err.message } }, 'redis connection error'));
  const queues = new QueueSet(redis, env.QUEUE_PREFIX, log);
  void warnOnRedisMemoryConfig(redis, log);
  return {
    log,
    catalog,
    redis,
    queues,
    async close() {
      await queues.close();
      redis.disconnect();
    },
  };
}
