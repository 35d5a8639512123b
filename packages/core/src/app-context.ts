import type { Catalog } from './job/catalog.js';
import { warnOnRedisMemoryConfig } from './redis/memory-info.js';
import { createRedis, type RedisClient, type RedisTarget } from './redis/connection.js';
import { DEFAULT_COMMAND_TIMEOUT_MS, setCommandTimeout } from './redis/deadline.js';
import { redisTargetOf, type RedisEnv } from './env.js';
import { loadCatalog } from './job/load-catalog.js';
import { createLogger, type Logger } from './logger.js';
import { QueueSet } from './queue/queues.js';
import { checkKeyLayout } from './redis/layout-check.js';
import { startTelemetry } from './telemetry/start.js';
import { createRedisOutageLog, waitForRedis, type RedisOutageLog } from './redis/redis-startup.js';

/** The env fields every app shares (see env.ts). */
export interface CommonEnv extends RedisEnv {
  LOG_LEVEL: string;
  JOBS_MODULE?: string | undefined;
  REDIS_STARTUP_TIMEOUT_MS?: number | undefined;
}

export interface AppContext {
  log: Logger;
  catalog: Catalog;
  /** Command connection (see connection.ts); blocking connections are made per Worker. */
  redis: RedisClient;
  queues: QueueSet;
  /** Where Redis is (REDIS_URL or REDIS_CLUSTER_NODES), for the app's other connections. */
  target: RedisTarget;
  /** Logs a Redis outage once and its end; give it the app's other connections too. */
  outage: RedisOutageLog;
  close(): Promise<void>;
}

/**
 * What every app opens at start, in the same order: its logger, the catalog (which validates every job,
 * so a bad definition stops start-up here), a command connection (a Redis that does not answer within
 * REDIS_STARTUP_TIMEOUT_MS, or refuses the password, stops start-up too, naming REDIS_URL), whose later
 * outages are logged once each, and the queues. Data under QUEUE_PREFIX in a key layout this app cannot
 * use (one Redis's on a cluster, or the reverse) stops start-up too (redis/layout-check.ts). It also warns, without waiting,
 * when Redis's memory settings put the queues at risk (no maxmemory, or a policy that evicts keys).
 * With the OpenTelemetry variables set it first starts traces (telemetry/start.ts); close flushes them.
 */
export async function openAppContext(
  app: string,
  env: CommonEnv,
  defaultCatalog: () => Promise<Catalog>,
): Promise<AppContext> {
  const log = createLogger(app, env.LOG_LEVEL);
  // Before any queue or worker is made: they take BullMQ's telemetry option when traces are on.
  const telemetry = await startTelemetry(app, log);
  const catalog = await loadCatalog(env.JOBS_MODULE, defaultCatalog);
  const target = redisTargetOf(app, env);
  // Before the first connection: every connection of the process takes it (redis/deadline.ts).
  setCommandTimeout(env.REDIS_COMMAND_TIMEOUT_MS ?? DEFAULT_COMMAND_TIMEOUT_MS);
  const redis = createRedis(target, 'command');
  try {
    await waitForRedis(redis, target, env.REDIS_STARTUP_TIMEOUT_MS ?? 10_000);
    await checkKeyLayout(redis, env.QUEUE_PREFIX, catalog.queues);
  } catch (err) {
    redis.disconnect();
    await telemetry.shutdown();
    throw err;
  }
  const outage = createRedisOutageLog(log, target);
  outage.watch(redis);
  const queues = new QueueSet(redis, env.QUEUE_PREFIX, log, outage.note);
  void warnOnRedisMemoryConfig(redis, log);
  return {
    log,
    catalog,
    redis,
    queues,
    target,
    outage,
    async close() {
      // During an outage a graceful close would wait for a Redis that is not there: drop the connection.
      if (outage.down) redis.disconnect();
      await queues.close();
      redis.disconnect();
      await telemetry.shutdown();
    },
  };
}
